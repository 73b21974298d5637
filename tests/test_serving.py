"""``tacred serve`` through a real HTTP client: answers equal the Python API's, bad requests get 4xx and a message,
concurrent requests are batched without mixing their answers. The server listens on 127.0.0.1 only."""

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


@pytest.fixture(scope="module")
def server(checkpoint, tmp_path_factory):
    from tacred.serving import serve_in_background

    log = tmp_path_factory.mktemp("serve") / "serve.log"
    with serve_in_background(str(checkpoint), extra=["--max_batch_size", "8", "--batch_timeout", "0.05",
                                                     "--num_threads", "1"], log_path=str(log)) as url:
        yield url
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]


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
    ([{"text": MARKED}, 5], 422, "input 1: expected a string or an object"),
])
@pytest.mark.slow  # the server is a subprocess
def test_bad_requests_get_4xx_with_a_message(server, body, status, message):
    response = post(server, body)
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
