"""Run an OpenHands agent with Concord in the sandbox image of this directory.

    pip install openhands-sdk==1.58.2 openhands-tools==1.58.2 openhands-workspace==1.58.2 <the concord_openhands wheel>
    make -C bindings/python docker-context
    docker build --platform linux/amd64 -t agent-server-concord:1.58.2 bindings/python/docker
    LLM_MODEL=... LLM_API_KEY=... python bindings/python/docker/example.py /path/to/project

The condenser runs inside the container (the server rebuilds the agent), so its
roots are container paths: the project is mounted at /workspace.
"""

from __future__ import annotations

import os
import sys

from pydantic import SecretStr

from openhands.sdk import LLM, Agent, Conversation, Tool
from openhands.workspace import DockerWorkspace

from concord_openhands import ConcordCondenser

IMAGE = os.environ.get("CONCORD_IMAGE", "agent-server-concord:1.58.2")


def main(project: str) -> None:
    llm = LLM(
        usage_id="agent",
        model=os.environ["LLM_MODEL"],
        api_key=SecretStr(os.environ["LLM_API_KEY"]),
        base_url=os.environ.get("LLM_BASE_URL"),
    )
    agent = Agent(
        llm=llm,
        tools=[Tool(name="file_editor"), Tool(name="terminal")],
        condenser=ConcordCondenser(roots=["/workspace"]),
    )
    with DockerWorkspace(server_image=IMAGE, volumes=[f"{os.path.abspath(project)}:/workspace"]) as ws:
        conv = Conversation(agent=agent, workspace=ws)
        try:
            conv.send_message("Read README.md and summarise it.")
            conv.run()
        finally:
            conv.close()  # stops the container's `concord serve` with the conversation


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
