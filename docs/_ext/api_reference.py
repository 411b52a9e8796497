"""Sphinx extension: writes the API reference (``api/*.md``) from penstock's operator registry at
the start of every build, so the reference lists what the code declares and cannot drift from it.

One page per ``fn`` submodule (``fn``, ``fn.readers``, ``fn.decoders`` ...), one section per
operator: its description, devices, inputs and outputs, its ``ops`` class and older names, every
argument (type, default, whether it may be a per-sample DataNode, its range and description) and
the differences from DALI 2.4 that the differential tests record as intended
(``tests/differential/known_differences.py``). Also the migration guide's table of those
differences (``api/differences.md``).
"""
from __future__ import annotations

import enum
import os
import runpy
from typing import Any

from penstock import fn  # noqa: F401  (importing fn declares every operator)
from penstock._registry import COMMON_ARGS, REQUIRED, Arg, OpSchema, schemas

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KNOWN_DIFFERENCES = os.path.join(ROOT, "tests", "differential", "known_differences.py")
HEADER = "<!-- Generated from penstock's operator registry by docs/_ext/api_reference.py: do not edit. -->\n\n"


def cell(text: Any) -> str:
    """Text for one cell of a Markdown table."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def default_text(arg: Arg) -> str:
    if arg.required:
        return "required"
    value = arg.default
    if value is REQUIRED or value is None:
        return "`None`"
    if isinstance(value, enum.Enum):
        return f"`types.{value.name}`"
    return f"`{value!r}`"


def range_text(low: Any, high: Any) -> str:
    if high is None:
        return f"at least {low}"
    if low is None:
        return f"at most {high}"
    return f"from {low} to {high}"


def argument_row(arg: Arg) -> str:
    notes = [arg.doc] if arg.doc else []
    if arg.range is not None:
        notes.append(range_text(*arg.range))
    if arg.aliases:
        notes.append("deprecated spelling: " + ", ".join(f"`{a}`" for a in arg.aliases))
    if arg.ignored_aliases:
        notes.append("accepted and ignored: " + ", ".join(f"`{a}`" for a in arg.ignored_aliases))
    return (f"| `{arg.name}` | {cell(arg.type.value)} | {cell(default_text(arg))} | "
            f"{'yes' if arg.tensor else 'no'} | {cell('; '.join(notes))} |")


def inputs_text(schema: OpSchema) -> str:
    if schema.max_inputs == -1:
        return f"{schema.min_inputs} or more"
    if schema.max_inputs == schema.min_inputs:
        return str(schema.min_inputs)
    return f"{schema.min_inputs} to {schema.max_inputs}"


def outputs_text(schema: OpSchema) -> str:
    return "depends on the arguments" if callable(schema.num_outputs) else str(schema.num_outputs)


PIPELINE = "(the pipeline)"


def operator_names() -> dict[str, str]:
    """Every name a case id may give an operator (its fn name, its former places, its last name
    part where no other operator has it) -> its fn name."""
    names: dict[str, str] = {}
    short: dict[str, list[str]] = {}
    for schema in exported():
        last = schema.fn_name.rpartition(".")[2]
        names[schema.fn_name] = schema.fn_name
        names.update({f"{former}.{last}": schema.fn_name for former in schema.moved_from})
        short.setdefault(last, []).append(schema.fn_name)
    return {**{last: fns[0] for last, fns in short.items() if len(fns) == 1}, **names}


def operator_case(case: str, names: dict[str, str]) -> str:
    """The fn name of the operator a differential case id names (``pad[fill_value=-1.0]``,
    ``caffe2:sparse``), or PIPELINE for a case of the pipeline itself (``device:cpu_only``)."""
    return names.get(case.split("[", 1)[0].split(":", 1)[0], PIPELINE)


def intended_differences() -> dict[str, dict[str, list[str]]]:
    """operator -> reason -> the case ids with that reason, from the differential tests' list."""
    if not os.path.exists(KNOWN_DIFFERENCES):
        return {}
    names = operator_names()
    found: dict[str, dict[str, list[str]]] = {}
    for case, reason in runpy.run_path(KNOWN_DIFFERENCES)["INTENDED"].items():
        found.setdefault(operator_case(case, names), {}).setdefault(reason, []).append(case)
    return found


def operator_section(schema: OpSchema, differences: dict[str, list[str]]) -> str:
    name = f"fn.{schema.fn_name}"
    lines = [f"## {name}", "", schema.doc.strip() or name, ""]
    facts = [("devices", ", ".join(schema.devices)), ("inputs", inputs_text(schema))]
    if schema.input_layouts:
        facts.append(("layouts of the first input", ", ".join(f"`{layout}`" for layout in schema.input_layouts)))
    facts += [("outputs", outputs_text(schema)),
             ("ops class", f"`ops.{schema.module + '.' if schema.module else ''}{schema.class_name}`")]
    if schema.legacy_names:
        facts.append(("older names", ", ".join(f"`ops.{n}`" for n in schema.legacy_names)))
    if schema.moved_from:
        facts.append(("former places (deprecated)", ", ".join(f"`fn.{m}`" for m in schema.moved_from)))
    if schema.deprecated:
        facts.append(("deprecated", f"use `fn.{schema.replaced_by}`" if schema.replaced_by else "yes"))
    if schema.is_random:
        facts.append(("random", "yes: draws from the pipeline's seed, or `seed`"))
    if schema.hidden:
        facts.append(("listed by DALI", "no (DALI keeps it out of its documentation)"))
    lines += ["| | |", "|---|---|"] + [f"| {k} | {cell(v)} |" for k, v in facts] + [""]
    own = [a for a in schema.arguments.values() if a not in COMMON_ARGS]
    if own:
        lines += ["| argument | type | default | per-sample | description |", "|---|---|---|---|---|"]
        lines += [argument_row(a) for a in own] + [""]
    if differences:
        lines += ["Intended differences from DALI 2.4:", ""]
        lines += [f"- {reason} ({', '.join(f'`{c}`' for c in cases)})" for reason, cases in differences.items()]
        lines.append("")
    return "\n".join(lines)


def exported() -> list[OpSchema]:
    return sorted((s for s in schemas().values() if not s.internal), key=lambda s: s.fn_name)


def page_name(schema: OpSchema) -> str:
    return "fn." + schema.module if schema.module else "fn"


def pages() -> dict[str, str]:
    """File name under api/ -> Markdown text."""
    differences = intended_differences()
    by_page: dict[str, list[OpSchema]] = {}
    for schema in exported():
        by_page.setdefault(page_name(schema), []).append(schema)
    out = {}
    for page, members in by_page.items():
        title = f"`{page}`" + (" (top level)" if page == "fn" else "")
        body = "\n".join(operator_section(s, differences.get(s.fn_name, {})) for s in members)
        out[f"{page}.md"] = (f"{HEADER}# {title}\n\n{len(members)} operators. Every one is also an `ops` class "
                             f"and a function of the dynamic mode; the arguments every operator takes are "
                             f"listed [on the reference's first page](index.md#arguments-of-every-operator).\n\n"
                             f"{body}")
    common = "\n".join(argument_row(a) for a in COMMON_ARGS)
    rows = "\n".join(f"| [`fn.{s.fn_name}`]({page_name(s)}.md#{anchor(s)}) | {', '.join(s.devices)} | "
                     f"{cell(first_sentence(s.doc))} |" for s in exported())
    toctree = "\n".join(page[:-3] for page in sorted(out))
    out["index.md"] = (
        f"{HEADER}# API reference\n\nGenerated from the operator registry at build time: "
        f"{len(exported())} operators. The same declarations give `fn.*`, `ops.*`, the dynamic mode's "
        f"functions, the type stubs and `help(fn.<name>)`.\n\n```{{toctree}}\n:maxdepth: 1\n\n{toctree}\n```\n\n"
        f"## Arguments of every operator\n\n| argument | type | default | per-sample | description |\n"
        f"|---|---|---|---|---|\n{common}\n\n## Operators\n\n| operator | devices | what it does |\n"
        f"|---|---|---|\n{rows}\n")
    out["differences.md"] = differences_table(differences)
    return out


def anchor(schema: OpSchema) -> str:
    """The anchor MyST gives the operator's heading (``fn.readers.file`` -> ``fnreadersfile``)."""
    return "".join(c for c in f"fn.{schema.fn_name}".lower() if c.isalnum() or c in "-_")


def first_sentence(text: str) -> str:
    text = " ".join(text.split())
    end = text.find(". ")
    return text if end < 0 else text[:end + 1]


INTENDED_PAGE = os.path.join(ROOT, "docs", "intended_differences.md")


def differences_table(differences: dict[str, dict[str, list[str]]]) -> str:
    """The migration guide's table: one row per operator and reason; and, where the docs have a
    page of intended differences, a link to it (in the site's contents, under the guide)."""
    rows = [f"| {op if op == PIPELINE else f'`fn.{op}`'} | {cell(reason)} |"
            for op, reasons in sorted(differences.items()) for reason in reasons]
    text = f"{HEADER}| operator | what penstock does differently, and why |\n|---|---|\n" + "\n".join(rows) + "\n"
    if os.path.exists(INTENDED_PAGE):
        text += ("\nThe intended differences, each with what DALI does and what penstock does: "
                 "{doc}`/intended_differences`.\n\n```{toctree}\n:hidden:\n\n/intended_differences\n```\n")
    return text


def write(folder: str) -> None:
    """Writes the pages into ``folder``, leaving files whose text is unchanged untouched (Sphinx
    rebuilds only what changed)."""
    os.makedirs(folder, exist_ok=True)
    wanted = pages()
    for name in os.listdir(folder):
        if name.endswith(".md") and name not in wanted:
            os.remove(os.path.join(folder, name))
    for name, text in wanted.items():
        path = os.path.join(folder, name)
        if os.path.exists(path):
            with open(path) as f:
                if f.read() == text:
                    continue
        with open(path, "w") as f:
            f.write(text)


def setup(app: Any) -> dict:
    app.connect("builder-inited", lambda app: write(os.path.join(app.srcdir, "api")))
    return {"parallel_read_safe": True}
