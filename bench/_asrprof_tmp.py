import time, os, numpy as np
from voiceapp.engine.models import ModelSettings, load_inference
from bench.questions import load_questions
from pathlib import Path
from voiceapp.engine.audio import resample
import asyncio
m = load_inference(ModelSettings())
qs = load_questions(Path("bench/.cache"))
audio = [resample(q.samples, 24000, 16000) for q in qs]
async def go():
    await m.transcribe(audio[0], "en")
    print("pid", os.getpid(), "ready", flush=True)
    open("/tmp/asr_ready","w").write(str(os.getpid()))
    time.sleep(1)
    t=time.process_time(); w=time.monotonic()
    for i in range(30):
        for a in audio: await m.transcribe(a, "en")
    print("cpu", time.process_time()-t, "wall", time.monotonic()-w, flush=True)
asyncio.run(go())
