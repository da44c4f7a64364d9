"""The realtime voice engine: plain Python, no Django, no Channels.

A transport pushes input audio into a `VoiceCall` and reads typed frames back
(see `frames`). Model work goes through an `Inference` implementation: either
`LocalInference` (backends in threads of this process) or the Channels client
in `voiceapp.inference.client` (backends in worker processes).
"""
