"""The WireServer serves recorded non-streaming bodies as providers do: one JSON body with a
``Content-Length`` (no chunked transfer), at the route of the non-streaming call."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import pytest

from reasoning_stream.testing._wire import Transcript, WireServer

ONE_SHOT = sorted(name for name in Transcript.bundled() if name.endswith("_oneshot"))


def test_every_provider_has_a_recorded_one_shot_body() -> None:
    # Seven provider APIs, and Mistral's chunk content on the OpenAI-compatible one.
    assert len(ONE_SHOT) == 8


@pytest.mark.parametrize("name", ONE_SHOT)
def test_a_one_shot_body_is_one_json_document_with_its_length(name: str) -> None:
    transcript = Transcript.load(name)
    path = transcript.path.replace("{modelId}", "some.model")
    with WireServer(transcript) as server:
        address = urlsplit(server.url)
        connection = http.client.HTTPConnection(address.hostname, address.port, timeout=5)
        try:
            connection.request(
                "POST", path, body=b"{}", headers={"Content-Type": "application/json"}
            )
            response = connection.getresponse()
            body = response.read()
            headers = {key.lower(): value for key, value in response.getheaders()}
        finally:
            connection.close()
    assert response.status == 200
    assert headers["content-type"].startswith("application/json")
    assert "transfer-encoding" not in headers
    assert int(headers["content-length"]) == len(body)
    assert json.loads(body) == transcript.events[0]
