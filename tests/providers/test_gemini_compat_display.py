"""``reasoning_display=`` on Gemini's OpenAI-compatible endpoint, through the openai SDK.

Google's OpenAI compatibility page (https://ai.google.dev/gemini-api/docs/openai#thinking)
asks for thought summaries with Gemini's own field inside the request body's ``extra_body``:
``{"extra_body": {"google": {"thinking_config": {"include_thoughts": true}}}}`` (its Python
example passes ``extra_body={"extra_body": {"google": ...}}`` to the SDK, whose own
``extra_body`` merges into the body). The compatible endpoint's rows say so in their data
(``display_control = "google_thinking_config"``), so ``OpenAIChatPipe`` sends it for any model
whose row says it, and for no other. What the server receives is asserted on the wire; a
user's own ``extra_body`` merges key by key, and its values win.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from reasoning_stream import UsageError, profiles
from reasoning_stream.providers import OpenAIChatPipe
from reasoning_stream.testing import WireServer
from tests.providers.test_gemini_rows import (  # the same rows, and no row left registered
    COMPAT_DOC,
    THINKING_MODELS,
    no_user_rows,  # noqa: F401
)


@pytest.fixture(scope="module")
def server() -> Iterator[WireServer]:
    with WireServer("openai_chat_gemini_thought_answer") as running:
        yield running


def _sent(server: WireServer, model: str, **options: Any) -> tuple[dict[str, Any], Any]:
    """Run one turn through the SDK at the compatible root; the body the server received."""
    with openai.OpenAI(
        base_url=server.url + "/v1beta/openai", api_key="k", max_retries=0
    ) as client:
        result = OpenAIChatPipe(model, client=client, **options).run("Weather in Paris?")
    return server.requests[-1].json(), result


def _include_thoughts(body: dict[str, Any]) -> Any:
    return body["extra_body"]["google"]["thinking_config"]["include_thoughts"]


@pytest.mark.parametrize("model", THINKING_MODELS)
def test_the_compatible_rows_say_how_display_is_sent(model: str) -> None:
    compatible = profiles.lookup("openai-chat", model)
    assert compatible.display_control == "google_thinking_config"
    assert COMPAT_DOC in [url for url, _ in compatible.sources]
    assert profiles.lookup("gemini", model).display_control is None
    assert profiles.lookup("openrouter", f"google/{model}").display_control is None


@pytest.mark.parametrize(
    ("display", "shown"), [("summarized", True), ("full", True), ("omitted", False)]
)
def test_the_display_reaches_the_wire_as_include_thoughts(
    server: WireServer, display: str, shown: bool
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "full" is planned as "summarized", with a warning
        body, result = _sent(server, "gemini-2.5-flash", reasoning_display=display)
    assert body["extra_body"] == {"google": {"thinking_config": {"include_thoughts": shown}}}
    assert "reasoning_effort" not in body  # no effort asked, none sent
    assert result.model_reasoning == "**Answering**\nThe tool said 18 °C."


def test_full_is_planned_as_the_nearest_documented_display() -> None:
    with pytest.warns(UserWarning, match="'summarized', the nearest"):
        plan = OpenAIChatPipe(
            "gemini-3-pro-preview", api_key="k", reasoning_display="full"
        ).reasoning_plan()
    assert plan.params == {
        "extra_body": {"google": {"thinking_config": {"include_thoughts": True}}}
    }


def test_an_effort_and_a_display_go_together(server: WireServer) -> None:
    """The effort stays ``reasoning_effort``; the page says only ``thinking_level`` and
    ``thinking_budget`` overlap it, and the display sends neither."""
    body, _ = _sent(
        server, "gemini-3-flash-preview", reasoning="low", reasoning_display="summarized"
    )
    assert body["reasoning_effort"] == "low"
    assert body["extra_body"] == {"google": {"thinking_config": {"include_thoughts": True}}}


def test_a_users_extra_body_merges_key_by_key_and_wins(server: WireServer) -> None:
    budget = {"extra_body": {"google": {"thinking_config": {"thinking_budget": 800}}}}
    body, _ = _sent(server, "gemini-2.5-flash", reasoning_display="summarized", extra_body=budget)
    assert body["extra_body"] == {
        "google": {"thinking_config": {"include_thoughts": True, "thinking_budget": 800}}
    }
    # The user's own include_thoughts wins over the planned one; their other fields stay.
    own = {
        "extra_body": {"google": {"thinking_config": {"include_thoughts": False}}},
        "top_k": 20,
    }
    body, _ = _sent(server, "gemini-2.5-flash", reasoning_display="summarized", extra_body=own)
    assert _include_thoughts(body) is False and body["top_k"] == 20
    # Without a display, the user's hand-written field goes out as they wrote it.
    by_hand = {"extra_body": {"google": {"thinking_config": {"include_thoughts": True}}}}
    body, _ = _sent(server, "gemini-2.5-flash", extra_body=by_hand)
    assert body["extra_body"] == by_hand["extra_body"]


def test_no_display_sends_nothing(server: WireServer) -> None:
    body, _ = _sent(server, "gemini-2.5-flash")
    assert "extra_body" not in body and "google" not in body


def test_a_model_whose_row_has_no_display_control_gets_none_and_a_note() -> None:
    """OpenAI's own models on Chat Completions have no display field: nothing is sent, and
    the plan says so."""
    plan = OpenAIChatPipe("gpt-5.1", api_key="k", reasoning_display="summarized").reasoning_plan()
    assert "extra_body" not in plan.params
    assert any("no field for reasoning_display" in note for note in plan.warnings)


def test_the_row_decides_not_the_model_id(server: WireServer) -> None:
    """An alias with no ``gemini`` in its id whose row says how display is sent gets it; a
    ``gemini-`` id whose row says nothing (a proxy that takes no Google fields) does not."""
    profiles.register(
        "openai-chat",
        "house-flash",
        base="gpt-4o",
        thinking="optional",
        displays=["summarized", "omitted"],
        display_control="google_thinking_config",
    )
    body, _ = _sent(server, "house-flash", reasoning_display="omitted")
    assert _include_thoughts(body) is False
    profiles.register(
        "openai-chat", "gemini-house-proxy", base="gemini-2.5-flash", display_control=None
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        body, _ = _sent(server, "gemini-house-proxy", reasoning_display="summarized")
    assert "extra_body" not in body
    # An alias that inherits the catalogue row inherits how its display is sent.
    profiles.register("openai-chat", "house-pro", base="gemini-2.5-pro")
    body, _ = _sent(server, "house-pro", reasoning_display="summarized")
    assert _include_thoughts(body) is True


def test_an_unknown_display_control_is_refused_naming_the_choices() -> None:
    with pytest.raises(UsageError, match="display_control='bogus'; choose one of"):
        profiles.register("openai-chat", "house-flash", base="gpt-4o", display_control="bogus")
    assert ("openai-chat", "house-flash") not in profiles.registered()
