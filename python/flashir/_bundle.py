"""Reading a kernel bundle's manifest.json (the typed kernel ABI)."""

import json
import os
import re

from .jit import ABI_VERSION


def _manifest(bundle_dir):
    manifest = json.load(open(os.path.join(bundle_dir, "manifest.json")))
    if manifest.get("abi_version") != ABI_VERSION:
        raise ValueError(f"bundle {bundle_dir} has kernel ABI version "
                         f"{manifest.get('abi_version')}, this package reads "
                         f"{ABI_VERSION}: rebuild it with this FlashIR's flashir-bundle")
    return manifest


def _arg(entry, role):
    """The argument of a kernel's manifest entry with a fixed `role`."""
    return [a for a in entry["args"] if a["role"] == role][0]


def _kernel_named(manifest, func, kind):
    """The split `<func>_<kind>_<n>` kernel's entry of a bundle's `manifest`
    (kind: "decode" or "prefill"), or None."""
    pattern = re.escape(func) + "_" + kind + r"_\d+"
    found = [k for k in manifest["kernels"]
             if re.fullmatch(pattern, k["name"]) and k["kind"] == kind
             and "merge_kernel" in k]
    return found[0] if found else None
