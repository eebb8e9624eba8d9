#!/usr/bin/env python3
"""Sums a CPU profile written by `data4help bench live|ingest --profile FILE` (SamplingProfiler).

    python3 Tools/profile-report.py FILE [--top N] [--focus FUNCTION-SUBSTRING] [--callers FUNCTION [--depth N]]

Prints the share of samples by layer (LAYERS: the first whose marker is on a sample's stack), by
module, by function where the CPU was (self), and by function anywhere on the stack (inclusive,
once a sample), by the async function a pool job resumed, and optionally the callers of one
function where it ran (`--callers swift_retain`). Symbols come from llvm-symbolizer (the Swift
toolchain's) and names from `swift demangle --simplified`. Stacks stop where an async function
was resumed, so inclusive shares of async callers are lower bounds.
"""
import argparse
import collections
import os
import shutil
import subprocess
import sys


# A sample's layer: the first of these with a marker on its stack, innermost frame first within
# the order below (the load generator before the server, whose code it shares on event loops).
LAYERS = [
    ("load generator: posting client (AsyncHTTPClient)", ["HTTP1ClientChannelHandler", "HTTPClient.", "HTTPConnectionPool",
                                                          "HTTP1Connection", "LiveBenchCommand", "IngestBenchCommand"]),
    ("load generator: spectators' WebSockets", ["LiveWatcher", "WebSocketClient"]),
    ("PostgreSQL client (postgres-nio, pool)", ["Postgres", "PSQL", "ConnectionPool", "PoolStateMachine", "ConnectionWatch"]),
    ("live view: announcements, hub, fan-out", ["EventListener", "LiveRunHub", "LiveRun.", "SpectatorHandler", "LiveAnnouncement",
                                                "WebSocket"]),
    ("server: an upload's reading (scanner, validation, samples)", ["UploadScanner", "IngestUploadBody", "UserDataController",
                                                                    "DataManager", "SampleColumns"]),
    ("server: a post's handling (router, middleware, JSON, rules)", ["Middleware", "RouterMethods", "RunPositionController",
                                                                     "LivePositions", "JSONBody", "Responder"]),
    ("server: HTTP (Hummingbird, NIOHTTP1)", ["HTTPServer", "HTTP1ToHTTPServerCodec", "HTTPChannel", "HTTP1Channel", "Hummingbird",
                                              "HTTPDecoder", "HTTPResponseEncoder"]),
    ("event loops: other (sockets, timers, wake-ups)", ["SelectableEventLoop"]),
    ("cooperative pool: other (task switches, executors)", ["swift_job_run", "_dispatch_worker_thread"]),
]


def layer(stack):
    for label, markers in LAYERS:
        if any(marker in name for _, name in stack for marker in markers):
            return label
    return "other"


def tool(name):
    for candidate in (shutil.which(name), os.path.join("/opt/swift/usr/bin", name)):
        if candidate and os.path.exists(candidate):
            return candidate
    sys.exit(f"{name} not found")


def read(path):
    maps, samples = [], []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("#"):
                continue
            if line.startswith("map "):
                fields = line.split()
                start, end = (int(x, 16) for x in fields[1].split("-"))
                maps.append((start, end, int(fields[3], 16), fields[6] if len(fields) > 6 else "?"))
            elif line.strip():
                samples.append([int(x, 16) for x in line.split()])
    return maps, samples


def locate(maps):
    """address -> (module path, address inside the module as linked)"""
    bases = {}
    for start, _, offset, path in maps:
        if offset == 0 and path not in bases:
            bases[path] = start
    spans = sorted((start, end, path) for start, end, _, path in maps)

    def where(address):
        for start, end, path in spans:
            if start <= address < end:
                return path, address - bases.get(path, start)
        return None, address
    return where


def symbolize(requests):
    """{(module, address)} -> function name"""
    names = {}
    by_module = collections.defaultdict(list)
    for module, address in requests:
        by_module[module].append(address)
    symbolizer, swift = tool("llvm-symbolizer"), tool("swift")
    for module, addresses in by_module.items():
        if module is None or not os.path.exists(module):
            for address in addresses:
                names[(module, address)] = f"[{os.path.basename(module or '?')}]"
            continue
        text = "\n".join(hex(a) for a in addresses) + "\n"
        out = subprocess.run([symbolizer, "--obj=" + module, "--functions=linkage", "--no-inlines", "--no-demangle"],
                             input=text, capture_output=True, text=True).stdout
        blocks = [b.split("\n") for b in out.strip("\n").split("\n\n")]
        raw = [b[0] if b and b[0] not in ("??", "") else f"[{os.path.basename(module)}]" for b in blocks]
        demangled = subprocess.run([swift, "demangle", "--simplified"], input="\n".join(raw) + "\n",
                                   capture_output=True, text=True).stdout.split("\n")
        for address, name in zip(addresses, demangled):
            names[(module, address)] = name.strip()[:160]
    return names


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("profile")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--focus", help="only samples with a function containing this on their stack")
    parser.add_argument("--callers", metavar="FUNCTION",
                        help="also: the callers (up to --depth frames) of this function where it was the running one")
    parser.add_argument("--depth", type=int, default=2)
    args = parser.parse_args()
    maps, samples = read(args.profile)
    where = locate(maps)
    # Frame 0 is the handler, then the signal trampoline; the next is the interrupted instruction,
    # the rest return addresses (one byte back, into the call).
    stacks = []
    for sample in samples:
        frames = sample[2:] if len(sample) > 2 else sample
        stacks.append([where(a if i == 0 else a - 1) for i, a in enumerate(frames)])
    names = symbolize({frame for stack in stacks for frame in stack})
    named = [[(module, names[(module, address)]) for module, address in stack] for stack in stacks]
    if args.focus:
        named = [s for s in named if any(args.focus in name for _, name in s)]
    total = len(named)
    if not total:
        sys.exit("no samples")
    modules, own, inclusive, layers = collections.Counter(), collections.Counter(), collections.Counter(), collections.Counter()
    for stack in named:
        layers[layer(stack)] += 1
        modules[os.path.basename(stack[0][0] or "?")] += 1
        own[stack[0][1]] += 1
        for name in {name for _, name in stack}:
            inclusive[name] += 1
    # The async function a job resumed: the frame the executor ran (a stack stops there, so this
    # names what the "cooperative pool: other" layer was doing).
    resumed, callers = collections.Counter(), collections.Counter()
    for stack in named:
        names_only = [name for _, name in stack]
        for depth, name in enumerate(names_only):
            if "runJobInEstablishedExecutorContext" in name:
                resumed[names_only[depth - 1] if depth > 0 else "?"] += 1
                break
        if args.callers and names_only and names_only[0] == args.callers:
            callers[" <- ".join(names_only[1:1 + args.depth])] += 1
    print(f"{total} samples" + (f" with {args.focus!r} on the stack" if args.focus else ""))
    tables = [("by layer", layers), ("by module (self)", modules), ("by function (self)", own), ("by function (inclusive)", inclusive),
              ("by async function resumed (the frame a pool job ran)", resumed)]
    if args.callers:
        tables.append((f"callers of {args.callers} (self samples)", callers))
    for title, counter in tables:
        print(f"\n{title}")
        for name, count in counter.most_common(args.top):
            print(f"{100 * count / total:6.2f} %  {name}")


if __name__ == "__main__":
    main()
