from django.apps import AppConfig


class InferenceConfig(AppConfig):
    name = "voiceapp.inference"
    label = "inference"
    verbose_name = "Inference workers"
