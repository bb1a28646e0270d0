"""Derived context in the real SDK (issue 36): the SDK's own summarizing condenser
(LLMSummarizingCondenser, after ConcordCondenser in a PipelineCondenser) compacts
the conversation; its summary, written by the scripted fake model, restates a
line of a file the agent read. ConcordCondenser tells the server which message
is the summary and which tool results it replaced (`compacted`); when the file
changes afterwards, the next model request carries a true correction about the
summary, once. A control run without Concord shows the stale summary.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

if sys.version_info < (3, 12):
    pytest.skip("the OpenHands SDK needs Python >= 3.12", allow_module_level=True)

from openhands.sdk.context.condenser import LLMSummarizingCondenser, PipelineCondenser  # noqa: E402
from openhands.sdk.event.condenser import Condensation  # noqa: E402

from concord_openhands import ConcordCondenser  # noqa: E402
from fake_llm import FakeLLM, Reply, Request, content_text  # noqa: E402
from test_openhands_e2e import (  # noqa: E402,F401 (the fixture closes conversations)
    _close_conversations,
    make_conversation,
    make_llm,
    write,
)

CONFIG = [
    "service: billing",
    "retry_limit: 3",
    "timeout_s: 30",
    "region: eu-west",
    "owner: payments",
    "log_level: info",
    "cache: on",
    "color: blue",
]
# What the fake model writes when the summarizer asks: it restates line 2, and nothing of line 8.
SUMMARY = "## Summary\nThe agent read config.txt: retry_limit: 3 (line 2). Next: decide the retry policy."
STALE, FRESH = "retry_limit: 3", "retry_limit: 5"
UNRELATED = "color: green"  # line 8, which the summary never restated


def think(call_id: str) -> Reply:
    # A different thought each time: the SDK's stuck detector stops a run that repeats one.
    return Reply.call(call_id, "think", thought=f"thinking it over ({call_id})")


def texts(m: dict) -> list[str]:
    content = m.get("content")
    if isinstance(content, list):
        return [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
    return [content_text(content)]


def summary_of(req: Request) -> str | None:
    """The text of the summary the model was sent: the SDK sends it as a user message, merged into
    the first user message before it as a second text part."""
    for m in req.messages:
        for text in texts(m) if m.get("role") == "user" else ():
            if text.startswith(SUMMARY):
                return text
    return None


def notes_in(req: Request) -> list[str]:
    """Concord's notes at the tail: text parts of their own."""
    return [t for m in req.messages for t in texts(m) if t.startswith("[concord]")]


def corrections(req: Request) -> list[str]:
    """What the request says about the summary beyond its own text: the part after the summary
    in place, and the errata at the tail."""
    text = summary_of(req) or ""
    return ([text[len(SUMMARY):]] if len(text) > len(SUMMARY) else []) + notes_in(req)


def scenario(f: Path, reqs: list[Request], *, concord: bool):
    """The script: read config.txt, three steps, (the summarizer compacts), then the changes.
    Each step records the request it answered."""
    changed = [FRESH if ln == STALE else ln for ln in CONFIG]

    def step(call_id: str, then=None):
        def answer(req: Request) -> Reply:
            reqs.append(req)
            if then is not None:
                then(req)
            return think(call_id)
        return answer

    def after_compaction(req: Request) -> None:
        # The summary replaced every tool result: call_1's read is gone, the summary stands.
        assert summary_of(req) == SUMMARY, req.messages
        assert not req.tool_results(), req.tool_results()
        write(f, changed)  # the line the summary restated changes

    def after_change(req: Request) -> None:
        write(f, changed[:7] + [UNRELATED])  # a line the summary never restated

    def finish(req: Request) -> Reply:
        reqs.append(req)
        return Reply.finish()

    return [
        lambda r: (reqs.append(r), Reply.call("call_1", "file_editor", command="view", path=str(f)))[1],
        step("call_2"),
        step("call_3"),
        step("call_4"),
        step("call_5", after_compaction),
        step("call_6", after_change),
        finish,
    ]


def summarizer(fake: FakeLLM) -> LLMSummarizingCondenser:
    # More than 8 events in the view condenses: after call_4's result, everything but the system
    # prompt and the first message goes into the summary.
    return LLMSummarizingCondenser(llm=make_llm(fake, "condenser"), max_size=8, keep_first=2)


def summary_request(req: Request) -> str:
    return SUMMARY


def play(workspace: Path, condenser_for) -> tuple[list[Request], FakeLLM, object]:
    f = workspace / "config.txt"
    write(f, CONFIG)
    reqs: list[Request] = []
    with FakeLLM(scenario(f, reqs, concord=True), untooled=summary_request) as fake:
        conv = make_conversation(fake, workspace, condenser_for(fake))
        conv.send_message("Please look at the config.")
        conv.run()
        fake.check()
    assert conv.state.execution_status.value == "finished", conv.state.execution_status
    condensations = [e for e in conv.state.events if isinstance(e, Condensation)]
    assert len(condensations) == 1 and condensations[0].summary == SUMMARY, condensations
    assert len(fake.side_requests) == 1, "one summary request"
    return reqs, fake, conv


@pytest.mark.parametrize("placement", ["inplace", "auto"])
def test_summary_of_a_changed_line_is_corrected(workspace, concord_bin, placement):
    f = workspace / "config.txt"
    concord = ConcordCondenser(roots=[str(workspace)], binary=concord_bin, placement=placement)
    try:
        reqs, fake, conv = play(workspace, lambda fake: PipelineCondenser(condensers=[concord, summarizer(fake)]))
        stats = concord.stats()
    finally:
        concord.close()
    assert len(reqs) == 7, len(reqs)
    first_seen, after_change, after_unrelated = reqs[4], reqs[5], reqs[6]
    assert summary_of(first_seen) == SUMMARY and corrections(first_seen) == []

    # The request after the restated line changed: one true correction about the summary, naming
    # the file and line 2 and saying what it says now.
    got = corrections(after_change)
    assert len(got) == 1, got
    fix = got[0]
    assert str(f) in fix and FRESH in fix and "2" in fix, fix
    # About the summary (by its event id, the anchor the binding gave it), not the read it replaced.
    summary_id = next(e.id for e in conv.state.events if isinstance(e, Condensation)) + "-summary"
    assert f"The summary in {summary_id} is outdated" in fix and "call_1" not in fix, fix
    if placement == "inplace":
        # The summary's text byte-identical, the correction after it.
        assert summary_of(after_change).startswith(SUMMARY) and notes_in(after_change) == []
    else:
        # auto: the summary was already sent; it stays byte-identical, the erratum goes at the tail.
        assert summary_of(after_change) == SUMMARY and notes_in(after_change) == [fix]

    # Line 8 changed, which the summary never restated: no new correction, and the one given is
    # not repeated (in place it stays as it was; at the tail the note is sticky, said once).
    assert corrections(after_unrelated) == [fix], corrections(after_unrelated)
    assert summary_of(after_unrelated) == summary_of(after_change)
    assert stats["summaries"] == 1, stats
    assert stats["corrections"] == 1, stats


def test_control_without_concord_the_summary_stays_stale(workspace):
    reqs, fake, conv = play(workspace, summarizer)
    after_change = reqs[5]
    assert summary_of(after_change) == SUMMARY
    assert STALE in summary_of(after_change)
    assert FRESH not in after_change.all_text() and "[concord]" not in after_change.all_text()
