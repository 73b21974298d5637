"""``tacred serve`` through a real HTTP client: answers of ``/predict`` and ``/extract`` equal the Python API's, bad
requests get 4xx and a message, a bad input of a list gets its own entry, concurrent requests are batched without
mixing their answers, an idle server uses next to no CPU and SIGTERM leaves no process behind. The server listens on
127.0.0.1 only; one server process for the whole file."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

requests = pytest.importorskip("requests")
pytest.importorskip("litserve")

MARKED = "<subj>Maria Lopez</subj> , the chief executive of <obj>Acme Holdings</obj> , said ."


@pytest.fixture(scope="module")
def examples(checkpoint) -> list[dict]:
    return json.loads((checkpoint.parents[2] / "data" / "test.json").read_text())


LIMITS = ["--max_body_bytes", "20000", "--max_tokens", "40", "--max_batch_inputs", "6"]
# the tiny model's relations break the signatures it learned: /extract keeps them, so that it has some to answer
EXTRACT = ["--no_signatures"]


@pytest.fixture(scope="module")
def served(checkpoint, tmp_path_factory):
    from tacred.serving.process import serve_in_background

    log = tmp_path_factory.mktemp("serve") / "serve.log"
    run_folder = checkpoint.parents[1]  # the run folder: its best.ckpt is served
    with serve_in_background(str(run_folder), extra=["--max_batch_size", "8", "--batch_timeout", "0.05",
                                                     "--num_threads", "1", *LIMITS, *EXTRACT], log_path=str(log)) as handle:
        handle.log = log
        yield handle
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]


@pytest.fixture(scope="module")
def server(served) -> str:
    return served.url


def post(url: str, body, **kwargs) -> requests.Response:
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return requests.post(f"{url}/predict", data=data, timeout=30, **kwargs)


@pytest.mark.slow  # the server is a subprocess
def test_health_answers(server):
    response = requests.get(f"{server}/health", timeout=10)
    assert response.status_code == 200 and response.text == "ok"


@pytest.mark.slow  # the server is a subprocess
def test_answers_equal_the_python_api(server, checkpoint, examples, nlp):
    from tacred import load_model

    model = load_model(checkpoint)
    expected = model.predict(examples[:5])
    got = post(server, examples[:5]).json()
    assert [g["relation"] for g in got] == [e.relation for e in expected]
    for g, e in zip(got, expected, strict=True):
        assert g["probability"] == pytest.approx(e.probability, abs=1e-6)
        assert g["id"] == e.id and set(g["probabilities"]) == set(model.labels)
    one = post(server, {"text": MARKED}, headers={"Content-Type": "application/json"})
    assert one.status_code == 200
    answer = one.json()
    assert isinstance(answer, dict)  # one input, one object
    assert (answer["subject"], answer["object"]) == ("Maria Lopez", "Acme Holdings")
    assert answer["probability"] == pytest.approx(model.predict(MARKED).probability, abs=1e-6)
    tokens = post(server, {"token": "Maria Lopez , the chief executive of Acme Holdings , said .".split(),
                           "h": {"pos": [0, 2]}, "t": {"pos": [7, 9]}}).json()
    assert tokens["relation"] == answer["relation"]


@pytest.mark.parametrize(("body", "status", "message"), [
    ('{"text": ', 400, "the request body is not JSON"),
    ({"text": "no markers here"}, 422, "no subject marker"),
    ([], 422, "empty list"),
    ({"token": ["a"], "h": {"pos": [0, 1]}, "t": {"pos": [0, 5]}}, 422, "does not fit 1 tokens"),
    ({"nothing": 1}, 422, "found the keys ['nothing']"),
    (5, 422, "expected a string or an object"),
    ({"text": MARKED.replace(" said", " said" * 45)}, 422, "more than the limit of 40 tokens per input"),
    ({"token": ["w"] * 41, "h": {"pos": [0, 1]}, "t": {"pos": [3, 4]}}, 422, "41 tokens, more than the limit of 40"),
    ([{"text": MARKED}] * 7, 422, "7 inputs, more than the limit of 6 per request (--max_batch_inputs)"),
    ({"text": "x" * 30000}, 413, "larger than the limit of 20000 bytes (--max_body_bytes)"),
])
@pytest.mark.slow  # the server is a subprocess
def test_bad_requests_get_4xx_with_a_message(server, body, status, message):
    response = post(server, body)
    assert response.status_code == status
    assert message in response.json()["detail"]


@pytest.mark.slow  # the server is a subprocess
def test_a_bad_input_of_a_list_gets_its_own_entry_and_the_others_their_answers(server, checkpoint, examples, nlp):
    from tacred import load_model

    model = load_model(checkpoint)
    response = post(server, [{"text": MARKED}, 5, {"text": "no markers here"}, examples[0]])
    assert response.status_code == 200, response.text
    good, wrong_type, no_marker, tacred_dict = response.json()
    assert good["probability"] == pytest.approx(model.predict(MARKED).probability, abs=1e-6)
    assert wrong_type == {"index": 1, "error": "input 1: expected a string or an object, found int"}
    assert no_marker["index"] == 2 and no_marker["error"].startswith("input 2: ") and "no subject marker" in \
        no_marker["error"]
    assert tacred_dict["id"] == examples[0]["id"] and tacred_dict["relation"] == model.predict(examples[0]).relation


TEXT = "Maria Lopez, the chief executive of Acme Holdings, said on Monday. John Smith was born in Chicago."


def extract(url: str, body) -> requests.Response:
    return requests.post(f"{url}/extract", data=body if isinstance(body, str) else json.dumps(body), timeout=60)


@pytest.fixture(scope="module")
def extractor(checkpoint, nlp):
    """What the server's /extract runs, built here with the server's options."""
    from tacred.extraction import DocumentExtractor, ExtractorSettings

    return DocumentExtractor(ExtractorSettings(str(checkpoint), max_tokens=40, signatures=False, num_threads=1))


@pytest.mark.slow  # the server is a subprocess
def test_extract_answers_what_tacred_extract_finds_in_the_text(server, extractor):
    from tacred.extraction import Document

    expected = extractor.process(Document("news-1", TEXT))
    response = extract(server, {"text": TEXT, "id": "news-1"})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert (answer["id"], answer["sentences"], answer["pairs"]) == ("news-1", 2, expected.pairs)
    assert len(answer["mentions"]) == len(expected.mentions) > 0
    for got, want in zip(answer["mentions"], expected.mentions, strict=True):
        assert got["probability"] == pytest.approx(want["probability"], abs=1e-5)
        assert {**got, "probability": 0} == {**want, "probability": 0}  # every other field as tacred extract has it
        for role in ("subject", "object"):
            assert TEXT[got[role]["start"]:got[role]["end"]] == got[role]["text"]
    binary = "\x00\x01" * 30
    listed = extract(server, [TEXT, {"text": "Nothing happened."}, 7, {"text": TEXT, "id": ["x"]}, binary])
    assert listed.status_code == 200, listed.text
    first, nothing, seven, bad_id, garbage = listed.json()
    assert first["id"] == "#0" and first["mentions"] == [
        {**m, "doc_id": "#0"} for m in answer["mentions"]]
    assert nothing == {"id": "#1", "sentences": 1, "pairs": 0, "mentions": []}
    assert seven == {"index": 2, "error": "input 2: expected a string or an object with 'text', found int"}
    assert bad_id == {"index": 3, "error": "input 3: 'id' must be a string or an integer, found ['x']"}
    assert garbage == {"index": 4, "error": "input 4: binary data (a NUL byte at offset 0)"}
    one_bad = extract(server, json.dumps(binary))  # one JSON string
    assert one_bad.status_code == 422 and one_bad.json()["detail"] == "input: binary data (a NUL byte at offset 0)"


@pytest.mark.parametrize(("body", "status", "message"), [
    ('{"text": ', 400, "the request body is not JSON"),
    ({"txt": TEXT}, 422, "input: expected an object with 'text' (and an optional 'id'), found the keys ['txt']"),
    (5, 422, "input: expected a string or an object with 'text', found int"),
    ([], 422, "empty list"),
    ([TEXT] * 7, 422, "7 inputs, more than the limit of 6 per request (--max_batch_inputs)"),
    ({"text": "x" * 30000}, 413, "larger than the limit of 20000 bytes (--max_body_bytes)"),
])
@pytest.mark.slow  # the server is a subprocess
def test_extract_refuses_bad_requests_with_the_limits_of_predict(server, body, status, message):
    response = extract(server, body)
    assert response.status_code == status
    assert message in response.json()["detail"]


@pytest.mark.slow  # the server is a subprocess
def test_concurrent_requests_are_batched_and_a_bad_one_spoils_no_other(server, examples, checkpoint):
    from tacred import load_model

    expected = {p.id: p.relation for p in load_model(checkpoint).predict(examples[:24])}
    bodies = [examples[i] if i % 4 else {"text": f"bad request {i}"} for i in range(24)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        responses = list(pool.map(lambda b: post(server, b), bodies))
    for i, (body, response) in enumerate(zip(bodies, responses, strict=True)):
        if i % 4:
            assert response.status_code == 200, response.text
            assert response.json()["relation"] == expected[body["id"]]
        else:
            assert response.status_code == 422
            assert "no subject marker" in response.json()["detail"]
    assert requests.get(f"{server}/health", timeout=10).status_code == 200  # still up


def test_the_command_checks_its_options_before_starting(tmp_path, capsys):
    from tacred.commands.serve import main

    assert main(["--ckpt_path", str(tmp_path / "missing.ckpt")]) == 2
    assert "checkpoint not found" in capsys.readouterr().err
    assert main(["--ckpt_path", "x", "--port", "80"]) == 2
    assert "--port must lie in 1024-65535" in capsys.readouterr().err


@pytest.mark.slow  # the server is a subprocess
def test_a_body_over_the_limit_is_refused_while_it_is_read(server):
    """Without a Content-Length (chunked upload) the limit applies to the bytes read so far."""
    chunks = (b"[" + b'"x",' * 2000 for _ in range(5))
    response = requests.post(f"{server}/predict", data=chunks, timeout=30)
    assert response.status_code == 413 and "--max_body_bytes" in response.json()["detail"]


@pytest.mark.slow  # the server is a subprocess
def test_a_port_in_use_is_one_line_and_status_2(served, checkpoint, capsys):
    from tacred.commands.serve import main

    port = served.url.rsplit(":", 1)[1]
    assert main(["--ckpt_path", str(checkpoint), "--port", port]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing printed as listening
    assert captured.err.splitlines() == [f"tacred serve: error: cannot listen on 127.0.0.1:{port}: Address already in "
                                         "use (another server?); choose another --port"]


@pytest.mark.slow  # the server is a subprocess; runs last in this file: it stops the server
def test_idle_it_uses_next_to_no_cpu_and_sigterm_stops_every_process(served):
    import os
    import signal
    import time

    from tacred.serving.process import cpu_seconds

    tree = served.tree()
    assert len(tree) >= 4, tree  # main, manager, model worker, HTTP server (and the resource tracker)
    time.sleep(1)
    before = sum(cpu_seconds(pid) for pid in tree)
    time.sleep(5)
    idle = sum(cpu_seconds(pid) for pid in tree) - before
    assert idle < 0.3, f"{idle:.2f} CPU seconds in 5 s of idling"  # LitServe's own loop: ~1 s
    os.kill(served.process.pid, signal.SIGTERM)  # `kill PID`: the main process only
    assert served.process.wait(timeout=60) == 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{pid}") for pid in tree):
        time.sleep(0.2)
    left = [pid for pid in tree if os.path.exists(f"/proc/{pid}")]
    assert not left, f"processes left after SIGTERM: {left}"
    assert "tacred serve: stopped" in served.log.read_text()
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{served.url}/health", timeout=5)
