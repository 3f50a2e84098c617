#!/usr/bin/env python3
r"""Check that ptprof's Chrome-trace output is accepted by the real trace consumers.

Consumers exercised (all from the venv this script runs in, e.g. ~/.cache/ptprof/venv/bin/python):
  * torch-tb-profiler 0.4.3 (TensorBoard "PyTorch Profiler" plugin), through its own loader code path
    (plugin run discovery + RunLoader, which parses every file in a child process exactly as TensorBoard does);
  * optionally the same plugin served by a real `tensorboard` subprocess, queried over its HTTP routes;
  * optionally HolisticTraceAnalysis (HTA) TraceAnalysis.

Usage:
  check_consumers.py --logdir DIR --run RUN --expect-workers N --expect-spans S --expect-steps K
                     [--ops-json FILE] [--tensorboard] [--hta] [--expect-kernels]

Exit status: 0 = all selected checks passed (a PASS summary is printed), 1 = at least one check failed
(each failure is printed as "FAIL [<check>] ..." on stderr), 2 = bad usage / consumer package missing.

Self-test:
  python tests/consumers/check_consumers.py --logdir tests/consumers/fixtures --run run1 \
      --expect-workers 1 --expect-spans 1 --expect-steps 3 \
      --ops-json tests/consumers/fixtures/run1.ops.json --tensorboard --hta

Fixture (tests/consumers/fixtures/): run1/host_123.1712195495501688512.pt.trace.json is a hand-written
CPU-only trace in Kineto's layout (pid/tid 123 + a second thread 124, ProfilerStep#2..#4 user_annotation spans
holding nested cpu_ops aten::linear > aten::t > aten::transpose > aten::as_strided, aten::addmm, ...; a
'my_region' user annotation; process/thread metadata, Trace span, Iteration Start / Record Window End);
run1.ops.json is the matching key_averages()-style name -> calls table (ProfilerStep#N and my_region included,
which the plugin does not list).

Only loopback is used (tensorboard is bound to 127.0.0.1); nothing else is contacted. With --tensorboard,
tensorboard loads every run under LOGDIR, so point it at a logdir holding only what is being checked.
"""

import argparse
import bisect
import contextlib
import gzip
import json
import logging
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter, defaultdict

# The plugin logs through the 'pytorch_profiler' logger at the level given by this variable; the loader's
# child processes inherit it. Keep INFO chatter out of the output unless asked for (-v).
if '-v' not in sys.argv and '--verbose' not in sys.argv:
    os.environ.setdefault('TORCH_PROFILER_LOG_LEVEL', 'WARNING')

PLUGIN_PREFIX = '/data/plugin/pytorch_profiler'
TB_STARTUP_TIMEOUT_S = 90.0  # upper bound for tensorboard to come up AND to have loaded the run
HTTP_TIMEOUT_S = 30.0

# Views every RunProfile gets (run_generator.py RunGenerator.generate_run_profile); Kernel only with kernels.
BASE_VIEWS = ('Overview', 'Operator', 'Trace')


class CheckFailed(Exception):
    pass


# ------------------------------------------------------------------------------------------------------------
# raw trace helpers (used to build expectations and to explain mismatches)
# ------------------------------------------------------------------------------------------------------------

def load_trace_json(path):
    with open(path, 'rb') as f:
        data = f.read()
    if path.endswith('.gz'):
        data = gzip.decompress(data)
    return json.loads(data)


def raw_summary(path):
    """What the file itself contains: per-name cpu_op counts, ProfilerStep#N spans, kernel count."""
    trace = load_trace_json(path)
    if not isinstance(trace, dict) or 'traceEvents' not in trace:
        raise CheckFailed('%s: top level is not an object with "traceEvents"' % path)
    cpu_ops = []
    steps = []
    kernels = 0
    for e in trace['traceEvents']:
        if e.get('ph') != 'X':
            continue
        cat = e.get('cat')
        name = e.get('name', '')
        if cat == 'cpu_op':
            cpu_ops.append(e)
        elif cat == 'kernel':
            kernels += 1
        if cat in ('user_annotation', 'cpu_op') and name.startswith('ProfilerStep#'):
            steps.append((int(name.split('#', 1)[1]), e['ts'], e['dur']))
    steps.sort(key=lambda s: s[1])
    # Data-loader time per step as the plugin's overview defines it: the union of the loader
    # ranges within the step (the file is CPU-only, so no role above DataLoader takes any of it).
    loader = sorted((e['ts'], e['ts'] + e['dur']) for e in trace['traceEvents']
                    if e.get('ph') == 'X' and (
                        (e.get('name', '').startswith('enumerate(DataLoader)#')
                         and e.get('name', '').endswith('.__next__'))
                        or e.get('name', '').startswith('enumerate(DataPipe)#')))
    loader_per_step = {}
    for step, ts, dur in steps:
        covered, end = 0.0, ts
        for lo, hi in loader:
            lo, hi = max(lo, end), min(hi, ts + dur)
            if hi > lo:
                covered += hi - lo
                end = hi
        loader_per_step[str(step)] = covered
    return {
        'cpu_ops': [e for e in cpu_ops if not e.get('name', '').startswith('ProfilerStep#')],
        'cpu_op_counts': Counter(e['name'] for e in cpu_ops if not e['name'].startswith('ProfilerStep#')),
        'steps': steps,
        'kernels': kernels,
        'loader_per_step': loader_per_step,
    }


# ------------------------------------------------------------------------------------------------------------
# 1. torch-tb-profiler loader
# ------------------------------------------------------------------------------------------------------------

class _LogdirHolder:
    """Stand-in `self` for TorchProfilerPlugin._get_run_dirs/_get_run_name: those two methods only read
    self.logdir, so calling them unbound runs the plugin's real discovery code without constructing the plugin
    (whose constructor starts monitor threads and a multiprocessing manager)."""

    def __init__(self, logdir):
        from torch_tb_profiler import io as tbio
        self.logdir = tbio.abspath(logdir.rstrip('/'))  # same normalisation as TorchProfilerPlugin.__init__


def discover_runs(logdir):
    """{run name: run dir} exactly as the plugin's _monitor_runs finds them."""
    from torch_tb_profiler.plugin import TorchProfilerPlugin
    holder = _LogdirHolder(logdir)
    runs = {}
    for run_dir in TorchProfilerPlugin._get_run_dirs(holder):
        runs[TorchProfilerPlugin._get_run_name(holder, run_dir)] = run_dir
    return runs


def plugin_file_map(run_dir):
    """{file basename: (worker, span key)} -- mirrors RunLoader.load(): files matching consts.WORKER_PATTERN,
    group(1) = worker, the optional '.<digits>' = span; spans of a worker are *string*-sorted (bisect.insort)
    and replaced by their 1-based index; Run.add_profile stores the key as str(index), or 'default' when the
    file name has no span part."""
    from torch_tb_profiler import consts
    from torch_tb_profiler import io as tbio
    workers = []
    spans_by_worker = defaultdict(list)
    for path in tbio.listdir(run_dir):
        if tbio.isdir(tbio.join(run_dir, path)):
            continue
        m = consts.WORKER_PATTERN.match(path)
        if not m:
            continue
        worker, span = m.group(1), m.group(2)
        if span is not None:
            span = span[1:]
            bisect.insort(spans_by_worker[worker], span)
        workers.append((worker, span, path))
    index = {}
    for worker, arr in spans_by_worker.items():
        for i, span in enumerate(arr, 1):
            index[(worker, span)] = i
    return {path: (worker, 'default' if span is None else str(index[(worker, span)]))
            for worker, span, path in workers}


def _alarm(_signum, _frame):
    raise TimeoutError('plugin loader did not finish in time')


def load_run_with_plugin(run_name, run_dir, timeout_s):
    """RunLoader(name, dir, io.Cache(tmp)).load(), the call TorchProfilerPlugin._load_run makes.

    The loader starts one child process per trace file with the 'spawn' start method (multiprocessing.py,
    TORCH_PROFILER_START_METHOD), so this script must be import-safe (main guarded) -- it is. load() waits on
    the result queue without a timeout, so a child that dies hard (segfault/OOM) would hang it: guard with
    SIGALRM and terminate our own children if that happens. Parse exceptions are caught inside the child, logged
    ('Failed to parse profile data ...') and the file is silently dropped from the run -- callers detect that
    by comparing with the expected workers/spans."""
    from torch_tb_profiler import io as tbio
    from torch_tb_profiler import multiprocessing as tbmp
    from torch_tb_profiler.profiler import RunLoader

    cache_dir = tempfile.mkdtemp(prefix='ptprof_tbcache_')
    cache = tbio.Cache(cache_dir)
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(int(timeout_s))
    try:
        return RunLoader(run_name, run_dir, cache).load()
    except TimeoutError:
        for child in tbmp.active_children():
            child.terminate()
        raise CheckFailed('torch_tb_profiler RunLoader.load() did not return within %ds '
                          '(a parser child process probably died)' % timeout_s)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        with contextlib.suppress(Exception):
            cache.__exit__(None, None, None)  # shuts the multiprocessing manager down
        shutil.rmtree(cache_dir, ignore_errors=True)


def explain_parse_failure(worker, path):
    """Re-run the plugin's per-file pipeline in-process to get the exception the child only logged."""
    from torch_tb_profiler.profiler.data import RunProfileData
    from torch_tb_profiler.profiler.run_generator import RunGenerator
    tmp = tempfile.mkdtemp(prefix='ptprof_tbparse_')
    try:
        data = RunProfileData.parse(worker, 1, path, tmp)
        RunGenerator(worker, 1, data).generate_run_profile()
        return 'in-process re-parse succeeded (failure not reproducible)'
    except Exception:
        return 'plugin parse raised (innermost frames):\n' + ''.join(traceback.format_exc(limit=-3))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def plugin_op_table(profile):
    """name -> calls of the Operator view ('Group By: Operator' table, same object /operation/table serves).

    What the plugin counts (read from torch_tb_profiler 0.4.3 source):
      * trace.py create_trace_event: X events with cat 'cpu_op'/'operator' become OperatorEvents, except
        names 'ProfilerStep#*' (-> ProfilerStepEvent). cat 'user_annotation' events are DROPPED entirely
        unless they are ProfilerStep#* or nccl:/gloo: collective names; python_function/python are not ops.
      * node.py create_operator_node: 'enumerate(DataLoader)#*.__next__', 'enumerate(DataPipe)#*' ->
        DataLoaderNode, 'Optimizer.step*' -> OptimizerNode (not counted).
      * op_tree.py builds one tree per int(tid) by interval nesting; an op that partially overlaps its would-be
        parent is logged ('ranges on the same thread should not intersect') and DROPPED. remove_dup_nodes then
        merges a parent with its only child when both are cpu_op with the same name (-> counted once), same as
        torch's EventList._remove_dup_nodes behind key_averages().
      * node.py is_operator_node: counted = plain OperatorNode of type Operator whose name is not
        'DataParallel.forward'/'DistributedDataParallel.forward' and does not start with 'Optimizer.'.
      * op_agg.py aggregate_ops: every counted node on every thread adds 1 to calls[name].
      * With python_function module events + fwdbwd flows, backward roots ('autograd::engine::evaluate_function:*')
        are re-parented under '<module>.backward' nodes; ones that find no forward are lost (op_tree.py).
    So every row is a cpu_op; ProfilerStep#N and user annotations (record_function) never appear."""
    return {row['name']: row['calls'] for row in profile.operation_table_by_name['data']}


class Checker:
    def __init__(self, args):
        self.args = args
        self.failures = []   # (check, message)
        self.passed = []     # (check, summary)
        self.run_dir = None
        self.file_map = {}   # basename -> (worker, span)
        self.raw = {}        # basename -> raw_summary
        self.run = None

    def fail(self, check, msg):
        self.failures.append((check, msg))
        print('FAIL [%s] %s' % (check, msg), file=sys.stderr, flush=True)

    def ok(self, check, msg):
        self.passed.append((check, msg))
        print('ok   [%s] %s' % (check, msg), flush=True)

    # -- 1 ------------------------------------------------------------------------------------------------------
    def check_plugin_loader(self):
        a = self.args
        check = 'plugin-loader'
        runs = discover_runs(a.logdir)
        if a.run not in runs:
            raise CheckFailed('run %r not found by the plugin under %s; runs found: %s (a run is a directory '
                              'holding >=1 file matching <worker>[.<digits>].pt.trace.json[.gz])'
                              % (a.run, a.logdir, sorted(runs) or 'none'))
        self.run_dir = runs[a.run]
        self.file_map = plugin_file_map(self.run_dir)
        keys = Counter(self.file_map.values())
        for path, key in sorted(self.file_map.items()):
            if keys[key] > 1:
                self.fail(check, 'file %s maps to (worker %r, span %r) like another file; the plugin keeps only '
                                 'one of them' % (path, key[0], key[1]))
        for path in self.file_map:
            self.raw[path] = raw_summary(os.path.join(self.run_dir, path))

        t0 = time.time()
        run = load_run_with_plugin(a.run, self.run_dir, a.loader_timeout)
        self.run = run
        load_s = time.time() - t0

        loaded = {k for k in run.profiles.keys() if k[0] != 'All'}  # 'All' = DistributedRunProfile
        for path, key in sorted(self.file_map.items()):
            if key not in loaded:
                self.fail(check, 'trace %s (worker %r span %r) was dropped by the plugin loader; %s'
                          % (path, key[0], key[1], explain_parse_failure(key[0], os.path.join(self.run_dir, path))))

        workers = [w for w in (run.workers if run.profiles else []) if w != 'All']
        if len(workers) != a.expect_workers:
            self.fail(check, 'expected %d workers, plugin has %d: %s' % (a.expect_workers, len(workers), workers))
        for w in workers:
            spans = run.get_spans(w) or []
            if len(spans) != a.expect_spans:
                self.fail(check, 'worker %r: expected %d spans, plugin has %d: %s'
                          % (w, a.expect_spans, len(spans), spans))

        want_views = list(BASE_VIEWS) + (['Kernel'] if a.expect_kernels else [])
        for path, key in sorted(self.file_map.items()):
            profile = run.profiles.get(key)
            if profile is None:
                continue
            views = [v.display_name for v in profile.views]
            missing = [v for v in want_views if v not in views]
            if missing:
                self.fail(check, '%s: views %s missing (plugin views: %s)' % (path, missing, views))
            step_names = [row[0] for row in profile.overview['steps']['rows']]
            raw_steps = [s[0] for s in self.raw[path]['steps']]
            if len(step_names) != a.expect_steps:
                hint = ''
                if not raw_steps:
                    hint = ' (without ProfilerStep#N events the plugin shows one synthetic step "0")'
                elif len(raw_steps) > len(step_names) and profile.has_kernel:
                    hint = (' (the plugin drops tail steps whose launched device work it could not match, '
                            'see event_parser.py _update_steps_duration)')
                self.fail(check, '%s: expected %d steps, the Overview has %d %s; ProfilerStep#N in file: %s%s'
                          % (path, a.expect_steps, len(step_names), step_names, raw_steps, hint))
            # DataLoader share of each step: the release drops user_annotation loader ranges, so
            # ptprof's TensorBoard files write them as cpu_op (Trace::SaveOptions::tensorboard).
            columns = [c.get('name') for c in profile.overview['steps']['columns']]
            if 'DataLoader' in columns and not self.raw[path]['kernels']:
                col = columns.index('DataLoader')
                for row in profile.overview['steps']['rows']:
                    want = self.raw[path]['loader_per_step'].get(str(row[0]))
                    if want is None or abs(row[col] - want) > 1.0:
                        self.fail(check, '%s: step %s DataLoader %.3f us in the Overview, %s us in the file'
                                  % (path, row[0], row[col], want))
            if not profile.operation_table_by_name['data'] and self.raw[path]['cpu_ops']:
                self.fail(check, '%s: Operator view is empty but the file has %d cpu_op events'
                          % (path, len(self.raw[path]['cpu_ops'])))
            if a.expect_kernels and not (profile.kernel_table and profile.kernel_table['data']['rows']):
                self.fail(check, '%s: --expect-kernels but the Kernel view table is empty' % path)
        if not any(c == check for c, _ in self.failures):
            self.ok(check, 'run %r: %d worker(s) x %d span(s), %d step(s) each, views %s (RunLoader %.1fs)'
                    % (a.run, len(workers), a.expect_spans, a.expect_steps,
                       [v.display_name for v in run.views], load_s))

    # -- memory -------------------------------------------------------------------------------------------------
    def check_memory(self):
        """The Memory view: present, and its per-device peak (the plugin's get_memory_curve takes the max of
        'Total Allocated' over the memory records that have an Addr) equals ptprof's own peak."""
        a = self.args
        check = 'memory-view'
        with open(a.memory_json) as f:
            spec = json.load(f)['traces']
        for path, key in sorted(self.file_map.items()):
            profile = self.run.profiles.get(key)
            if profile is None:
                continue
            views = [v.display_name for v in profile.views]
            if 'Memory' not in views:
                self.fail(check, '%s: no Memory view (views: %s)' % (path, views))
                continue
            records = profile.memory_snapshot.memory_records if profile.memory_snapshot else []
            peaks = defaultdict(int)
            for r in records:
                if r.addr is None:
                    continue
                peaks[r.device_name] = max(peaks[r.device_name], r.total_allocated)
            want = spec.get(os.path.basename(path))
            if want is None:
                self.fail(check, '%s: no ptprof memory peaks given' % path)
                continue
            for dev, peak in want.items():
                got = peaks.get(dev)
                if got is None or int(got) != int(peak):
                    self.fail(check, '%s: device %s peak: plugin %s, ptprof %s' % (path, dev, got, peak))
            curve = profile.get_memory_curve()
            if not curve['rows']:
                self.fail(check, '%s: the memory curve is empty' % path)
        if not any(c == check for c, _ in self.failures):
            self.ok(check, 'Memory view present; peaks equal ptprof\'s for %d trace(s)' % len(self.file_map))

    # -- 2 ------------------------------------------------------------------------------------------------------
    def check_ops(self):
        a = self.args
        check = 'operator-view'
        with open(a.ops_json) as f:
            spec = json.load(f)
        if not isinstance(spec, dict) or not isinstance(spec.get('traces'), dict):
            raise CheckFailed('%s: expected {"traces": {"<trace file basename>": {"<op>": calls}}}' % a.ops_json)
        tables = spec['traces']
        for extra in sorted(set(tables) - set(self.file_map)):
            self.fail(check, '%s lists trace %r which is not a trace file of run %r (files: %s)'
                      % (a.ops_json, extra, a.run, sorted(self.file_map)))
        n_compared = 0
        for path, key in sorted(self.file_map.items()):
            if path not in tables:
                self.fail(check, '%s has no entry for trace file %r' % (a.ops_json, path))
                continue
            profile = self.run.profiles.get(key)
            if profile is None:
                self.fail(check, '%s: no plugin profile to compare (dropped by the loader)' % path)
                continue
            ours = tables[path]
            theirs = plugin_op_table(profile)
            raw = self.raw[path]['cpu_op_counts']
            bad = []
            # (a) every op the Operator view lists (all are cpu_op events) must have the same count in ptprof.
            for name, calls in sorted(theirs.items()):
                if name not in ours:
                    bad.append('%s: plugin calls=%d, ptprof: missing (cpu_op events in file: %d)'
                               % (name, calls, raw.get(name, 0)))
                elif ours[name] != calls:
                    bad.append('%s: plugin calls=%d, ptprof calls=%d (cpu_op events in file: %d)'
                               % (name, calls, ours[name], raw.get(name, 0)))
            # (b) every aten:: op ptprof reports must be in the plugin's view. Non-aten rows that the plugin
            #     does not define (ProfilerStep#N, record_function user annotations, ...) are not compared.
            for name, calls in sorted(ours.items()):
                if name.startswith('aten::') and name not in theirs:
                    bad.append('%s: ptprof calls=%s, plugin: missing (cpu_op events in file: %d)'
                               % (name, calls, raw.get(name, 0)))
            if bad:
                self.fail(check, '%s: %d operator mismatch(es):\n    %s' % (path, len(bad), '\n    '.join(bad)))
            n_compared += len(theirs)
        if not any(c == check for c, _ in self.failures):
            self.ok(check, '%d file(s), %d plugin operator rows match ptprof call counts'
                    % (len(self.file_map), n_compared))

    # -- 3 ------------------------------------------------------------------------------------------------------
    def check_tensorboard(self):
        check = 'tensorboard'
        a = self.args
        logf = tempfile.NamedTemporaryFile(prefix='ptprof_tb_', suffix='.log', delete=False)
        logf.close()
        proc = None
        try:
            proc, base = start_tensorboard(a.logdir, logf.name)
            checked = tb_http_checks(self, base, proc, logf.name)
            self.ok(check, 'served by tensorboard at %s; endpoints checked: %s' % (base, ', '.join(checked)))
        except CheckFailed as e:
            self.fail(check, '%s\n--- tensorboard log tail ---\n%s' % (e, _tail(logf.name)))
        finally:
            stop_process_group(proc)
            with contextlib.suppress(OSError):
                os.unlink(logf.name)

    # -- 4 ------------------------------------------------------------------------------------------------------
    def check_hta(self):
        check = 'hta'
        try:
            summaries = hta_checks(self)
            self.ok(check, '; '.join(summaries))
        except CheckFailed as e:
            self.fail(check, str(e))


# ------------------------------------------------------------------------------------------------------------
# 3. tensorboard subprocess + plugin HTTP routes (plugin.py get_plugin_apps)
# ------------------------------------------------------------------------------------------------------------

def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _tail(path, n=40):
    with contextlib.suppress(OSError):
        with open(path, errors='replace') as f:
            return ''.join(f.readlines()[-n:])
    return ''


def start_tensorboard(logdir, log_path):
    exe = os.path.join(os.path.dirname(sys.executable), 'tensorboard')
    cmd = [exe] if os.access(exe, os.X_OK) else [sys.executable, '-m', 'tensorboard.main']
    port = _free_port()
    cmd += ['--logdir', os.path.abspath(logdir), '--host', '127.0.0.1', '--port', str(port)]
    env = dict(os.environ)
    env.setdefault('TORCH_PROFILER_LOG_LEVEL', 'INFO')
    with open(log_path, 'w') as log:
        log.write('$ %s\n' % ' '.join(cmd))
        log.flush()
        # own session/process group so that tensorboard, its data-server and the plugin's loader children
        # can all be stopped together (stop_process_group) -- and only those.
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
    return proc, 'http://127.0.0.1:%d' % port


def stop_process_group(proc):
    """Stop the tensorboard we started: SIGTERM to it alone first (tensorboard exits through sys.exit, so the
    plugin's atexit cleanup shuts its multiprocessing manager down and removes its temp dir), then the whole
    process group it leads (data server, manager, loader children) with SIGTERM and finally SIGKILL."""
    if proc is None:
        return
    steps = ((lambda: proc.send_signal(signal.SIGTERM), 8),
             (lambda: os.killpg(proc.pid, signal.SIGTERM), 3),
             (lambda: os.killpg(proc.pid, signal.SIGKILL), 3))
    for send, wait in steps:
        if proc.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError):
            send()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=wait)
    # reap anything left in its group (the group id is tensorboard's pid, we created it with start_new_session)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only, ignore *_proxy env


def http_get(base, route, raw=False, **params):
    url = base + route + ('?' + urllib.parse.urlencode(params) if params else '')
    try:
        with _OPENER.open(url, timeout=HTTP_TIMEOUT_S) as r:
            body = r.read()
            if r.headers.get('Content-Encoding') == 'gzip':
                body = gzip.decompress(body)
    except urllib.error.HTTPError as e:
        raise CheckFailed('GET %s -> HTTP %d: %s' % (url, e.code, e.read()[:300]))
    except (urllib.error.URLError, OSError) as e:
        raise CheckFailed('GET %s failed: %s' % (url, e))
    if raw:
        return body
    try:
        return json.loads(body)
    except ValueError:
        raise CheckFailed('GET %s: response is not JSON: %r' % (url, body[:200]))


def tb_http_checks(checker, base, proc, log_path):
    a = checker.args
    checked = []
    P = PLUGIN_PREFIX
    deadline = time.time() + TB_STARTUP_TIMEOUT_S

    # wait for the server, then for the run: the plugin's monitor thread scans the logdir on start and adds a
    # run to /runs only once its RunLoader finished ('loading' is true while any run is loading).
    runs = None
    while True:
        if proc.poll() is not None:
            raise CheckFailed('tensorboard exited early with status %s' % proc.returncode)
        try:
            runs = http_get(base, P + '/runs')
            if a.run in runs.get('runs', []):
                break
            if runs.get('runs') and not runs.get('loading'):
                raise CheckFailed('/runs lists %s but not %r (loading finished)' % (runs['runs'], a.run))
        except CheckFailed as e:
            if 'HTTP' in str(e) or 'loading finished' in str(e):
                raise
        if time.time() > deadline:
            raise CheckFailed('run %r not served within %.0fs; last /runs answer: %s'
                              % (a.run, TB_STARTUP_TIMEOUT_S, runs))
        time.sleep(0.5)
    checked.append(P + '/runs')

    listing = http_get(base, '/data/plugins_listing')
    if 'pytorch_profiler' not in listing or not listing['pytorch_profiler'].get('enabled', False):
        raise CheckFailed('/data/plugins_listing does not show pytorch_profiler as enabled: %s'
                          % listing.get('pytorch_profiler'))
    checked.append('/data/plugins_listing')

    views = http_get(base, P + '/views', run=a.run)
    want_views = list(BASE_VIEWS) + (['Kernel'] if a.expect_kernels else [])
    if [v for v in want_views if v not in views]:
        raise CheckFailed('/views for %r = %s, expected to include %s' % (a.run, views, want_views))
    checked.append(P + '/views')

    workers = http_get(base, P + '/workers', run=a.run, view='Overview')
    if len(workers) != a.expect_workers:
        raise CheckFailed('/workers (view=Overview) = %s, expected %d workers' % (workers, a.expect_workers))
    checked.append(P + '/workers')

    # in-process profiles by (worker, span), to compare what HTTP serves with what the loader produced
    local = checker.run.profiles if checker.run is not None else {}
    n_rows = 0
    for w in workers:
        spans = http_get(base, P + '/spans', run=a.run, worker=w) or []
        if len(spans) != a.expect_spans:
            raise CheckFailed('/spans for worker %r = %s, expected %d spans' % (w, spans, a.expect_spans))
        for s in spans:
            q = dict(run=a.run, worker=w, span=s)
            ov = http_get(base, P + '/overview', **q)
            rows = ov.get('steps', {}).get('rows', [])
            if len(rows) != a.expect_steps or not ov.get('performance'):
                raise CheckFailed('/overview %s: %d step rows %s (expected %d), performance=%s'
                                  % (q, len(rows), [r[0] for r in rows], a.expect_steps, ov.get('performance')))
            pie = http_get(base, P + '/operation', group_by='Operation', **q)
            if not isinstance(pie, dict) or 'host_self_time' not in pie:
                raise CheckFailed('/operation %s: unexpected answer %s' % (q, str(pie)[:200]))
            table = http_get(base, P + '/operation/table', group_by='Operation', **q)
            served = {r['name']: r['calls'] for r in table.get('data', [])}
            if not served:
                raise CheckFailed('/operation/table %s: no operator rows' % q)
            n_rows += len(served)
            if (w, s) in local and served != plugin_op_table(local[(w, s)]):
                raise CheckFailed('/operation/table %s differs from the in-process loader table:\n  http=%s\n  '
                                  'loader=%s' % (q, served, plugin_op_table(local[(w, s)])))
            http_get(base, P + '/operation', group_by='OperationAndInputShape', **q)
            http_get(base, P + '/operation/table', group_by='OperationAndInputShape', **q)
            trace = json.loads(http_get(base, P + '/trace', raw=True, **q))
            if not trace.get('traceEvents'):
                raise CheckFailed('/trace %s: served trace has no traceEvents' % q)
            if a.expect_kernels:
                kpie = http_get(base, P + '/kernel', **q)
                ktab = http_get(base, P + '/kernel/table', group_by='Kernel', **q)
                if not kpie or not ktab.get('data', {}).get('rows'):
                    raise CheckFailed('/kernel/table %s: no kernel rows' % q)
    checked += [P + r for r in ('/spans', '/overview', '/operation', '/operation/table', '/trace')]
    if a.expect_kernels:
        checked += [P + '/kernel', P + '/kernel/table']
    return checked


# ------------------------------------------------------------------------------------------------------------
# 4. HolisticTraceAnalysis
# ------------------------------------------------------------------------------------------------------------

def _hta_expectations(raw):
    """Expected HTA rows, using HTA's own rules (common/trace_parser.py, common/trace.py):
      * float ts/dur are rounded: ts = ceil(ts), end = floor(ts + dur), dur = end - ts;
      * with >1 ProfilerStep, Trace._filter_irrelevant_gpu_kernels keeps only CPU events with
        ts <= max(end of ProfilerSteps) (include_last_profiler_step=True; the default False would drop every
        CPU event of the LAST step, including its ProfilerStep row, so get_profiler_steps() returns K-1);
      * add_iteration: a CPU event gets the N of the (last) ProfilerStep#N with step.ts <= ts < step.ts+dur,
        else -1.
    Returns (sure, ambiguous): a list of (name, iteration) for the ops whose row does not depend on how a
    parser rounds a time within 1 us of a step's edge, and for the others (name, set of possible iterations,
    None for "filtered out"). HTA reads times with its own float parsing, so an op that starts within a
    microsecond of a step's end may land on either side (seen: an add_ 0.3 us after the last step's end)."""
    steps = [(n, math.ceil(ts), math.floor(ts + dur)) for n, ts, dur in raw['steps']]
    last_end = max((e for _, _, e in steps), default=None)

    def row(ts):
        ts_c = math.ceil(ts)
        if len(steps) > 1 and ts_c > last_end:
            return None
        it = -1
        for n, s_ts, s_end in steps:
            if s_ts <= ts_c < s_ts + (s_end - s_ts):
                it = n
        return it

    sure, ambiguous = [], []
    for e in raw['cpu_ops']:
        rows = {row(e['ts'] - 1), row(e['ts']), row(e['ts'] + 1)}
        if len(rows) == 1:
            it = rows.pop()
            if it is not None:
                sure.append((e['name'], it))
        else:
            ambiguous.append((e['name'], rows))
    return sure, ambiguous


def _hta_rows_match(got, sure, ambiguous):
    """'' if HTA's rows `got` (Counter of (name, iteration)) are the sure rows plus one possible row (or none,
    where filtering it out is possible) for each ambiguous op, else what differs."""
    want = Counter(sure)
    missing = want - got
    extra = list((got - want).elements())
    # Bipartite matching of ambiguous ops to the extra rows (Kuhn): ops that HTA cannot have filtered out
    # go first and must all be matched; matched ops stay matched as the others are added.
    order = sorted(range(len(ambiguous)), key=lambda i: None in ambiguous[i][1])
    row_of = {}  # extra row index -> ambiguous op index

    def augment(i, seen):
        name, rows = ambiguous[i]
        for r, (n, it) in enumerate(extra):
            if n == name and it in rows and r not in seen:
                seen.add(r)
                if r not in row_of or augment(row_of[r], seen):
                    row_of[r] = i
                    return True
        return False

    unplaced = [ambiguous[i][0] for i in order if not augment(i, set()) and None not in ambiguous[i][1]]
    unexplained = Counter(extra[r] for r in range(len(extra)) if r not in row_of)
    if not missing and not unexplained and not unplaced:
        return ''
    lines = ['%s iteration %d: hta=%d expected=%d' % (n, it, got[(n, it)], want[(n, it)])
             for n, it in sorted(set(missing) | set(unexplained))]
    lines += ['%s (within 1 us of a step edge) missing from HTA\'s rows' % n for n in unplaced]
    return '\n    '.join(lines[:30])


def _hta_load(trace_dir=None, trace_files=None):
    from hta.trace_analysis import TraceAnalysis
    if trace_files is not None:
        return TraceAnalysis(trace_files=trace_files, include_last_profiler_step=True)
    return TraceAnalysis(trace_dir=trace_dir, include_last_profiler_step=True)


def _hta_check_rank(ta, rank, path, raw, expect_steps, expect_kernels):
    t = ta.t
    df = t.get_trace(rank)
    sym = t.symbol_table.get_sym_table()
    names = df['name'].map(lambda i: sym[i])
    cats = df['cat'].map(lambda i: sym[i])
    problems = []

    # per-rank ProfilerStep rows (what get_profiler_steps() unions over ranks)
    step_rows = sorted({int(n.split('#', 1)[1]) for n in names[names.str.startswith('ProfilerStep#')]})
    raw_steps = sorted(s[0] for s in raw['steps'])
    if len(step_rows) != expect_steps or step_rows != raw_steps:
        problems.append('profiler steps %s, expected %d (ProfilerStep#N in file: %s)'
                        % (step_rows, expect_steps, raw_steps))

    cpu = df[cats == 'cpu_op']
    cpu_names = names[cats == 'cpu_op']
    sure, ambiguous = _hta_expectations(raw)
    got = Counter(zip(cpu_names[~cpu_names.str.startswith('ProfilerStep#')],
                      cpu['iteration'][~cpu_names.str.startswith('ProfilerStep#')].astype(int)))
    if not got and (sure or ambiguous):
        problems.append('no cpu_op rows loaded (file has %d cpu_op events)' % len(raw['cpu_ops']))
    else:
        diff = _hta_rows_match(got, sure, ambiguous)
        if diff:
            problems.append('cpu_op rows differ from the file (after HTA rounding/filtering):\n    ' + diff)
    kernels = int((cats == 'kernel').sum())
    if expect_kernels and kernels == 0:
        problems.append('--expect-kernels but HTA loaded no kernel rows (file has %d)' % raw['kernels'])
    if problems:
        raise CheckFailed('%s (rank %d): %s' % (path, rank, '; '.join(problems)))
    return '%s: rank %d, %d cpu_op rows, steps %s%s' % (
        path, rank, len(cpu), step_rows, (', %d kernels' % kernels) if expect_kernels else '')


def hta_checks(checker):
    """HTA keys traces by rank: Trace(trace_dir=...) takes every *.json/*.gz in the directory (non-recursive)
    and the rank from the first '"rank":\\s+(\\d+)' match in each file (rank 0 + warning when absent); files of
    the same rank overwrite each other. A run directory with S spans per worker therefore cannot be loaded as a
    whole. So: every trace file is copied alone into a temp dir and loaded with TraceAnalysis(trace_dir=tmp)
    -- the directory discovery path, rank regex included -- and checked on its own. If the files carry distinct
    ranks, they are additionally loaded together from an explicit {rank: path} map (not the dir itself, which
    may hold other .json files) to exercise HTA's multi-rank path (fork pool, rank alignment)."""
    a = checker.args
    hta_logger = logging.getLogger('hta')
    if not a.verbose:
        hta_logger.setLevel(logging.ERROR)  # HTA warns on every parse (timings, ns rounding, missing rank)
    from hta.common.trace_file import create_rank_to_trace_dict

    summaries = []
    ranks = {}
    for path in sorted(checker.file_map):
        src = os.path.join(checker.run_dir, path)
        tmp = tempfile.mkdtemp(prefix='ptprof_hta_')
        try:
            shutil.copy(src, os.path.join(tmp, path))
            try:
                ta = _hta_load(trace_dir=tmp)
            except Exception as e:
                raise CheckFailed('%s: HTA TraceAnalysis failed to load it: %s\n%s'
                                  % (path, e, traceback.format_exc(limit=-4)))
            rks = ta.t.get_ranks()
            if len(rks) != 1:
                raise CheckFailed('%s: HTA loaded ranks %s from a single file' % (path, rks))
            ranks[path] = rks[0]
            summaries.append(_hta_check_rank(ta, rks[0], path, checker.raw[path], a.expect_steps,
                                             a.expect_kernels))
            steps = [int(s) for s in ta.get_profiler_steps()]
            if len(steps) != a.expect_steps:
                raise CheckFailed('%s: TraceAnalysis.get_profiler_steps() = %s, expected %d steps'
                                  % (path, steps, a.expect_steps))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    if len(checker.file_map) > 1:
        _, rank_map = create_rank_to_trace_dict([os.path.join(checker.run_dir, p) for p in sorted(checker.file_map)])
        if len(set(ranks.values())) == len(ranks):
            try:
                ta = _hta_load(trace_files={r: p for r, p in rank_map.items()})
            except Exception as e:
                raise CheckFailed('multi-rank load of %d files failed: %s\n%s'
                                  % (len(ranks), e, traceback.format_exc(limit=-4)))
            if sorted(ta.t.get_ranks()) != sorted(ranks.values()):
                raise CheckFailed('multi-rank load: ranks %s, expected %s'
                                  % (ta.t.get_ranks(), sorted(ranks.values())))
            summaries.append('multi-rank load of ranks %s ok' % sorted(ranks.values()))
        else:
            summaries.append('files share ranks %s, so each was checked alone (HTA keeps one file per rank)'
                             % sorted(Counter(ranks.values()).items()))
    return summaries


# ------------------------------------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog='\n\n'.join(__doc__.split('\n\n')[1:]))
    p.add_argument('--logdir', required=True, help='TensorBoard logdir (parent of run directories)')
    p.add_argument('--run', required=True, help='run name as the plugin shows it (dir path relative to logdir)')
    p.add_argument('--expect-workers', type=int, required=True, metavar='N')
    p.add_argument('--expect-spans', type=int, required=True, metavar='S', help='spans (trace files) per worker')
    p.add_argument('--expect-steps', type=int, required=True, metavar='K', help='ProfilerStep#N steps per span')
    p.add_argument('--ops-json', metavar='FILE',
                   help='{"traces": {"<trace basename>": {"<op name>": calls}}} from ptprof\'s own table')
    p.add_argument('--tensorboard', action='store_true', help='also serve LOGDIR with tensorboard and query it')
    p.add_argument('--hta', action='store_true', help='also load every trace with HolisticTraceAnalysis')
    p.add_argument('--expect-kernels', action='store_true', help='require the Kernel view / GPU kernels')
    p.add_argument('--memory-json', metavar='FILE',
                   help='{"traces": {"<trace file basename>": {"<device>": peak allocated bytes}}} from '
                        'ptprof\'s memory timeline; the plugin\'s Memory view must exist and show these peaks')
    p.add_argument('--loader-timeout', type=int, default=60, metavar='SEC',
                   help='bound for the in-process plugin loader (default 60)')
    p.add_argument('-v', '--verbose', action='store_true', help='keep plugin/HTA logging')
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if not os.path.isdir(args.logdir):
        print('FAIL [args] --logdir %s is not a directory' % args.logdir, file=sys.stderr)
        return 2
    if args.ops_json and not os.path.isfile(args.ops_json):
        print('FAIL [args] --ops-json %s does not exist' % args.ops_json, file=sys.stderr)
        return 2
    missing = []
    for mod, flag in (('torch_tb_profiler', True), ('tensorboard', args.tensorboard), ('hta', args.hta)):
        if flag:
            try:
                __import__(mod)
            except ImportError as e:
                missing.append('%s (%s)' % (mod, e))
    if missing:
        print('FAIL [env] missing consumer package(s) in %s: %s' % (sys.executable, ', '.join(missing)),
              file=sys.stderr)
        return 2

    t0 = time.time()
    c = Checker(args)
    try:
        c.check_plugin_loader()
    except CheckFailed as e:
        c.fail('plugin-loader', str(e))
    if args.ops_json:
        if c.run is None:
            c.fail('operator-view', 'skipped: the plugin loader did not produce a run')
        else:
            try:
                c.check_ops()
            except CheckFailed as e:
                c.fail('operator-view', str(e))
    if args.memory_json:
        if c.run is None:
            c.fail('memory-view', 'skipped: the plugin loader did not produce a run')
        else:
            try:
                c.check_memory()
            except (CheckFailed, OSError, KeyError, ValueError) as e:
                c.fail('memory-view', str(e))
    if args.tensorboard:
        c.check_tensorboard()
    if args.hta:
        if not c.file_map:
            c.fail('hta', 'skipped: no trace files found for run %r' % args.run)
        else:
            c.check_hta()
    dt = time.time() - t0
    if c.failures:
        checks = sorted({k for k, _ in c.failures})
        print('FAILED %d problem(s) in %s (%.1fs)' % (len(c.failures), ', '.join(checks), dt), file=sys.stderr)
        return 1
    print('PASS %s: %s (%.1fs)' % (args.run, ', '.join(k for k, _ in c.passed), dt))
    return 0


if __name__ == '__main__':
    sys.exit(main())
