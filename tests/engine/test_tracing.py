from voiceapp.engine.tracing import SPAN_NAMES, TurnTrace


def test_spans_come_from_marks_on_one_clock() -> None:
    # given a trace on a fake clock with every mark set
    now = [0.0]
    trace = TurnTrace(clock=lambda: now[0])
    for name, at in [
        ("speech_end", 10.0),
        ("asr_start", 10.1),
        ("asr_end", 10.16),
        ("llm_start", 10.17),
        ("llm_first_token", 10.22),
        ("first_clause", 10.3),
        ("tts_start", 10.3),
        ("end_of_turn", 10.35),
        ("tts_first_audio", 10.38),
        ("first_audio_sent", 10.4),
    ]:
        now[0] = at
        trace.mark(name)
    trace.llm_queue_ms = 1.25
    trace.asr_queue_ms, trace.asr_reads = 0.44, 2
    # when spans are read
    spans = trace.spans()
    # then each is the difference of its marks in ms
    assert set(spans) == set(SPAN_NAMES)
    # and a response's latency adds what explains the ASR span
    assert trace.latency() == {**spans, "asr_queue_ms": 0.4, "asr_reads": 2}
    assert spans["v2v_ms"] == 400.0
    assert spans["endpoint_ms"] == 350.0
    assert spans["asr_ms"] == 60.0
    assert spans["llm_first_token_ms"] == 50.0
    assert spans["first_clause_ms"] == 130.0
    assert spans["tts_first_audio_ms"] == 80.0
    assert spans["send_ms"] == 20.0
    assert spans["llm_queue_ms"] == 1.2 or spans["llm_queue_ms"] == 1.3


def test_missing_marks_give_none_and_first_mark_wins() -> None:
    trace = TurnTrace(clock=lambda: 5.0)
    trace.mark("speech_end")
    trace.mark("speech_end", 99.0)
    assert trace.marks["speech_end"] == 5.0
    assert trace.spans()["v2v_ms"] is None
