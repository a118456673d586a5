"""Laws of the "auto" inline-tag reader: tags only where the text opens with one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import openai
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from reasoning_stream import (
    Event,
    ReasoningDelta,
    ReasoningStart,
    ReasoningStream,
    TextDelta,
)
from reasoning_stream.providers import OpenAIChatPipe
from reasoning_stream.providers._inline import LeadingTagScanner
from reasoning_stream.providers.openai_chat import OpenAIChatTranslator
from reasoning_stream.testing._wire import WireServer
from reasoning_stream.testing.strategies import chunkings, tag_text
from tests.helpers import REFERENCE_TAG, examples, reference_split, segments_and_text
from tests.providers.conftest import drive, serve
from tests.reference import reference_split_auto

# 300 examples per law: about a second each on the shared machine.
LAWS = settings(max_examples=examples(300), deadline=None)


def read(chunks: Sequence[str]) -> list[Event]:
    reader = LeadingTagScanner()
    events: list[Event] = []
    for chunk in chunks:
        events.extend(reader.feed(chunk))
    events.extend(reader.flush())
    return coalesced(events)


def coalesced(events: Sequence[Event]) -> list[Event]:
    """Adjacent text and reasoning deltas joined; empty deltas dropped."""
    out: list[Event] = []
    for event in events:
        if isinstance(event, TextDelta | ReasoningDelta):
            if not event.text:
                continue
            if out and type(out[-1]) is type(event):
                out[-1] = type(event)(out[-1].text + event.text)  # type: ignore[union-attr]
                continue
        out.append(event)
    return out


@st.composite
def text_with_chunks(draw: st.DrawFn, prefix: st.SearchStrategy[str]) -> tuple[str, list[str]]:
    text = draw(prefix) + draw(tag_text())
    return text, draw(chunkings(text))


@LAWS
@given(text_with_chunks(st.sampled_from(["", " ", "\n"])))
def test_reading_does_not_depend_on_the_chunking(case: tuple[str, list[str]]) -> None:
    text, chunks = case
    assert read(chunks) == read([text])


@LAWS
@given(
    text_with_chunks(
        st.tuples(
            st.sampled_from(["", "  ", "\n"]),
            st.text(min_size=1).filter(
                lambda s: not s.lstrip().startswith("<") and s.strip() != ""
            ),
        ).map("".join)
    )
)
def test_text_that_does_not_open_with_a_tag_passes_through_untouched(
    case: tuple[str, list[str]],
) -> None:
    """Whatever follows (tags, escapes, partial tags), the answer is the input, byte for byte."""
    text, chunks = case
    assert read(chunks) == [TextDelta(text)]


@LAWS
@given(text_with_chunks(st.sampled_from(["<think>", " <think>", "\n<thinking>", "<reasoning>"])))
def test_text_that_opens_with_a_tag_is_read_as_reasoning(case: tuple[str, list[str]]) -> None:
    _, chunks = case
    events = read(chunks)
    assert any(isinstance(event, ReasoningStart) for event in events)
    assert not any(
        isinstance(event, TextDelta) and event.text.strip()
        for event in events[: events.index(ReasoningStart())]
    )


# ----------------------------------------- the profile decides; translator = scanner = split

# (model, inline_tags, start_in_reasoning) -> split's setting (True, False, None), or "leading"
# for auto mode on a model no profile knows (tags only in a text that opens with one).
SETTINGS: dict[tuple[str, bool | str, bool | None], bool | str | None] = {
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "auto", None): True,
    ("Qwen/Qwen3-4B-Thinking-2507", "auto", None): True,
    ("allenai/Olmo-3-7B-Think", "auto", None): True,
    ("Qwen/Qwen3-8B", "auto", None): False,
    ("my-local-model", "auto", True): True,
    ("my-local-model", True, False): False,
    ("my-local-model", True, None): None,
    ("my-local-model", "auto", None): "leading",
}


def reference_leading(text: str) -> tuple[list[str], str]:
    """Auto mode for an unknown model, from the contract's words: a text that opens with an
    unescaped tag (whitespace aside) is read by rule 4; any other text is all answer."""
    match = REFERENCE_TAG.match(text.lstrip())
    if match is None or match.group(1):
        return [], text
    return reference_split_auto(text)[:2]


def translate(
    model: str, inline_tags: bool | str, start: bool | None, chunks: list[str]
) -> list[Event]:
    translator = OpenAIChatTranslator(
        provider="openai-chat",
        model=model,
        inline_tags=inline_tags,  # type: ignore[arg-type]
        start_in_reasoning=start,
    )
    events: list[Event] = []
    for chunk in chunks:
        events += translator.feed({"choices": [{"index": 0, "delta": {"content": chunk}}]})
    return events + translator.finish()


def scanned(setting: bool | None, chunks: list[str]) -> list[Event]:
    scanner = ReasoningStream.scanner(assume_open=setting)
    events: list[Event] = []
    for chunk in chunks:
        events += scanner.feed(chunk)
    return events + scanner.flush()


@pytest.mark.filterwarnings("ignore::reasoning_stream.profiles.UnknownModelWarning")
@pytest.mark.parametrize(("model", "inline_tags", "start"), list(SETTINGS))
@LAWS
@given(case=text_with_chunks(st.sampled_from(["", " ", "R</think>", "<think>", "\n</think>"])))
@example(case=("plan</think>answer", ["pl", "an</th", "ink>ans", "wer"]))
@example(case=("</think>answer", ["</thi", "nk>answer"]))
def test_translator_scanner_and_split_agree_on_every_text_and_chunking(
    model: str, inline_tags: bool | str, start: bool | None, case: tuple[str, list[str]]
) -> None:
    """The inline rule (API sections 1, 2 and 12): the chat translator reads content as the
    scanner and ``split()`` read it under the setting the model's profile (or the caller)
    gives; an independent reading of the rules is the oracle."""
    text, chunks = case
    assume(text)  # a stream without content has no segment to read, not even an empty one
    setting = SETTINGS[(model, inline_tags, start)]
    translated = segments_and_text(translate(model, inline_tags, start, chunks))
    if setting == "leading":
        assert translated == reference_leading(text)
        return
    assert isinstance(setting, bool | None)
    result = ReasoningStream.split(text, lossless=True, assume_open=setting)
    expected = (list(result.segments), result.text)
    assert translated == expected
    assert segments_and_text(scanned(setting, chunks)) == expected
    reference = (
        reference_split_auto(text)
        if setting is None
        else reference_split(text, start_in_reasoning=setting)
    )
    assert expected == reference[:2]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "model",
    [
        "Qwen/Qwen3-235B-A22B-Thinking-2507",
        "allenai/Olmo-3-7B-Think",
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
    ],
)
async def test_a_template_that_opens_think_streams_reasoning_up_to_the_close_tag(
    wire: WireServer, mode: str, model: str
) -> None:
    """Issue 23: the stream holds only ``</think>`` (vLLM without a reasoning parser); the
    profile says the template opened it, so nothing of it leaks into the answer.
    Qwen3 Thinking-2507: huggingface.co/Qwen/Qwen3-235B-A22B-Thinking-2507; OLMo 3 Think:
    allenai.github.io/open-instruct/olmo3; R1: huggingface.co/deepseek-ai/DeepSeek-R1."""
    site = serve(wire, "openai_chat_r1_prefilled")
    chunks: list[str] = []
    if mode == "run":
        client: Any = openai.OpenAI(base_url=site.base_url, api_key="k", max_retries=0)
    else:
        client = openai.AsyncOpenAI(base_url=site.base_url, api_key="k", max_retries=0)
    try:
        pipe = OpenAIChatPipe(model, client=client).set_streaming_callback(chunks.append)
        result = await drive(pipe, "2+2?", mode)
    finally:
        closed = client.close()
        if hasattr(closed, "__await__"):
            await closed
    assert "</think>" not in result.text
    assert result.model_reasoning == "Okay, the user wants 2+2.\n"
    assert result.text == "\n\n2 + 2 = 4."
    assert "".join(chunks).startswith(ReasoningStream.OPEN_TAG + "Okay")
