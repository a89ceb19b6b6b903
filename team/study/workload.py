"""The experiment's workload: a seeded project, a team with distinct profiles, fixed tasks.

The sim agent's actions follow from its task subjects and the files it finds (see
`team.llm.sim_policy`): it greps for the subject's longest word, lists and measures the
workspace, reads one of the first five files it found, writes notes and tells a teammate.
So each profile is made of subjects whose keyword leads to a particular kind of file:

- `reader` (researcher): the keyword sits on the short title line of five long documents
  with wide lines, so grep prints five short lines and every `read_file` (120 lines) is big.
- `runner` (operator): the keyword is on every line of many wide log files, so the grep
  output is large (80 wide lines) while each log it then reads is small.
- `coder` (reviewer): a few small source modules: light on both.

Every task is created owned by its agent and delivered to its inbox before the team
starts, so nobody races to claim anything and the task ids are the same in every run.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from team.backends.post import send
from team.tasks import TaskBoard
from team.workspace.config import parse_config
from team.workspace.places import Workspace

PROFILES = (
    ("reader", "researcher", "Reads long design documents and summarises them."),
    ("runner", "operator", "Runs commands over the logs to investigate failing jobs."),
    ("coder", "reviewer", "Reviews small source modules."),
)
DOCS_PER_TOPIC = 5  # the sim reads one of the first five files it finds
DOC_LINES = 140
DOC_LINE_WORDS = 48  # ~300 characters a line: a 120-line read is ~36k characters
LOGS_PER_JOB = 10
LOG_LINES = 12
MODULES_PER_AREA = 3

# Plain lowercase words: no keyword (they all contain "_") can match inside them.
PROSE = (
    "the system keeps a record of every change and replays it after a restart so that "
    "nothing is lost when a node fails while the leader waits for a majority of peers to "
    "acknowledge each entry before it applies the entry to its state machine and answers "
    "the client with the result of the operation in the order it was proposed"
)
WORDS = tuple(PROSE.split())
TOPICS = (
    "quorum_replication",
    "snapshot_compaction",
    "lease_renewal",
    "shard_rebalancing",
    "membership_change",
    "clock_skew_handling",
    "backpressure_policy",
    "checkpoint_format",
    "read_repair",
    "hinted_handoff",
    "gossip_protocol",
    "tombstone_expiry",
)
JOBS = (
    "nightly_ingest_job",
    "billing_export_job",
    "search_reindex_job",
    "invoice_mailer_job",
    "cache_warmup_job",
    "audit_rollup_job",
    "metrics_downsample_job",
    "backup_verify_job",
    "report_render_job",
    "token_rotation_job",
    "queue_drain_job",
    "image_resize_job",
)
AREAS = (
    "inventory_helpers",
    "pricing_rules",
    "order_routing",
    "refund_checks",
    "stock_alerts",
    "supplier_import",
    "label_printing",
    "tax_tables",
    "cart_merging",
    "coupon_limits",
    "return_windows",
    "shipping_quotes",
)


@dataclass(frozen=True)
class Workload:
    """What every strategy runs: the same agents, files, tasks and sim seed.

    Attributes:
        agents: how many agents (profiles repeat past three: reader, runner, coder, ...).
        tasks_per_agent: tasks pre-assigned to each agent.
        seed: seeds both the generated files and the sim's choices.
    """

    agents: int = 3
    tasks_per_agent: int = 8
    seed: int = 7

    def team(self) -> list[tuple[str, str, str]]:
        """(name, role, prompt) of every agent, in order."""
        out = []
        for i in range(self.agents):
            name, role, prompt = PROFILES[i % len(PROFILES)]
            rank = i // len(PROFILES)
            out.append((f"{name}-{rank + 1}" if rank else name, role, prompt))
        return out

    def subjects(self) -> list[tuple[str, str]]:
        """(owner, subject) of every task in creation order (ids 1, 2, ...)."""
        topics: dict[str, int] = {}
        out = []
        for _ in range(self.tasks_per_agent):
            for i, (name, _, _) in enumerate(self.team()):
                kind = i % len(PROFILES)
                n = topics.get(name, 0)
                topics[name] = n + 1
                word = _word(kind, i // len(PROFILES), n)
                out.append((name, SUBJECTS[kind].format(word)))
        return out


SUBJECTS = (
    "Summarise the design documents about {}",
    "Investigate the recent failures of {}",
    "Review the functions in the {} modules",
)


def _word(kind: int, rank: int, n: int) -> str:
    """The keyword of an agent's n-th task: distinct across agents and tasks."""
    pool = (TOPICS, JOBS, AREAS)[kind]
    word = pool[n % len(pool)]
    cycle = rank + (n // len(pool))
    return f"{word}_{cycle + 1}" if cycle else word


def config_dict(workload: Workload, compaction: dict) -> dict:
    """The team.toml contents (as a dict) for one strategy's run."""
    return {
        "team": {"name": "experiment", "model": "sim"},
        "compaction": compaction,
        "agents": [{"name": n, "role": r, "prompt": p} for n, r, p in workload.team()],
    }


def seed_files(root: Path, workload: Workload) -> None:
    """Write the project the agents work on: documents, logs and source modules."""
    rng = random.Random(workload.seed)
    for i in range(workload.agents):
        kind = i % len(PROFILES)
        for n in range(workload.tasks_per_agent):
            word = _word(kind, i // len(PROFILES), n)
            (_write_docs, _write_logs, _write_modules)[kind](root, word, rng)


def _prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _write_docs(root: Path, topic: str, rng: random.Random) -> None:
    folder = root / "docs" / topic
    folder.mkdir(parents=True, exist_ok=True)
    for part in range(1, DOCS_PER_TOPIC + 1):
        body = "\n".join(f"{k}. {_prose(rng, DOC_LINE_WORDS)}." for k in range(1, DOC_LINES + 1))
        (folder / f"part-{part}.md").write_text(f"# {topic}, part {part}\n\n{body}\n")


def _write_logs(root: Path, job: str, rng: random.Random) -> None:
    folder = root / "logs" / job
    folder.mkdir(parents=True, exist_ok=True)
    for run in range(1, LOGS_PER_JOB + 1):
        lines = []
        for k in range(LOG_LINES):
            level = rng.choice(("INFO", "WARN", "ERROR"))
            lines.append(
                f"2025-03-{run:02d}T02:{k:02d}:00Z {level} {job} run={run} step={k} "
                f"{_prose(rng, 30)}"
            )
        (folder / f"run-{run:02d}.log").write_text("\n".join(lines) + "\n")


def _write_modules(root: Path, area: str, rng: random.Random) -> None:
    folder = root / "src" / area
    folder.mkdir(parents=True, exist_ok=True)
    for m in range(1, MODULES_PER_AREA + 1):
        funcs = "\n\n".join(
            f"def {area}_step_{k}(items):\n"
            f'    """{_prose(rng, 8).capitalize()}."""\n'
            f"    return sorted(items)[:{k}]"
            for k in range(1, 6)
        )
        (folder / f"part_{m}.py").write_text(f'"""The {area} module, part {m}."""\n\n{funcs}\n')


def render_toml(data: dict) -> str:
    """team.toml text for `config_dict`'s shape (strings, numbers, booleans, string lists)."""

    def value(v: object) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int | float):
            return repr(v)
        return json.dumps(v)  # a JSON string or list of strings is valid TOML

    lines: list[str] = []
    for table in ("team", "compaction"):
        lines += [f"[{table}]", *(f"{k} = {value(v)}" for k, v in data[table].items()), ""]
    for agent in data["agents"]:
        lines += ["[[agents]]", *(f"{k} = {value(v)}" for k, v in agent.items()), ""]
    return "\n".join(lines)


def prepare(root: Path, workload: Workload, compaction: dict) -> Workspace:
    """A fresh workspace for one run: team.toml, the seeded files, the tasks delivered.

    Args:
        root: an empty or missing folder.
        workload: what to run.
        compaction: the `[compaction]` table of this run's strategy.
    """
    ws = Workspace.at(root)
    ws.root.mkdir(parents=True, exist_ok=True)
    data = config_dict(workload, compaction)
    parse_config(data)  # refuse a bad strategy before anything is written
    ws.config_path.write_text(render_toml(data))
    config = ws.load_config()
    seed_files(ws.root, workload)
    board = TaskBoard(ws.tasks_dir)
    for owner, subject in workload.subjects():
        task = board.create(subject, owner=owner)
        send(ws, config, owner, subject, type="task", task_id=task.id)
    return ws
