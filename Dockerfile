# One image for every Python process of the platform (web, inference, celery).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential cmake \
    libpango-1.0-0 libpangoft2-1.0-0 libopus0 \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.lock requirements-nodeps.txt ./
# llama.cpp is compiled for a fixed instruction set, not the build machine's CPU (-march=
# native), so the image runs on other hosts too: see llama_cmake_args in ./dev.
RUN case "$(uname -m)" in \
      x86_64) export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON" ;; \
      *) export CMAKE_ARGS="-DGGML_NATIVE=OFF" ;; \
    esac \
 && pip install -r requirements.lock \
 && pip install --no-deps -r requirements-nodeps.txt \
 && apt-get purge -y build-essential cmake && apt-get autoremove -y

COPY . .
RUN DEBUG=0 SECRET_KEY=build-only python manage.py collectstatic --noinput -v0 \
 && useradd --system --home /app voiceapp && mkdir -p /app/var && chown -R voiceapp /app/var
USER voiceapp

EXPOSE 8000
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "voiceapp.asgi:application"]
