"""A python for the tests that run an experiment script with its real python calls: a server
imports torch once, and each call is a fork of it that runs the call's script, module or code as
`python ARG...` would, in the caller's working folder, environment, umask and standard streams,
and exits with its exit code. A job of a smoke run works for milliseconds after seconds of imports
(torch, and torch._dynamo, which every optimizer imports), so a script of thirty jobs runs in a
fraction of the time. Only these third-party imports are shared: the repository's modules are
imported afresh in every call, as in a new interpreter.

  python tests/warm_python.py serve NAME      the server on the abstract socket NAME ('ready' once
                                              it listens); SIGTERM stops it
  python -S tests/warm_python.py NAME ARG...  a call: ARG... as to python (SCRIPT ARGS, -m MODULE
                                              ARGS, -c CODE ARGS or - ARGS)

warm_python() starts a server and gives the command a script takes as its PYTHON (on Linux; on
other systems a plain python, as a fork after torch's imports is not safe everywhere)."""
import json
import os
import socket
import subprocess
import sys
from contextlib import contextmanager

HERE = os.path.abspath(__file__)

# -----------------------------------------------------------------------------
# the call: its streams, folder and environment to the server, its exit code back


def call(name, args):
    if args[:1] not in (['-c'], ['-m'], ['-']) and args[:1] and args[0].startswith('-'):
        os.execv(sys.executable, [sys.executable, *args])  # an interpreter flag: a real python
    umask = os.umask(0)
    os.umask(umask)
    request = dict(args=args, cwd=os.getcwd(), env=dict(os.environ), umask=umask)
    with socket.socket(socket.AF_UNIX) as server:
        server.connect('\0' + name)
        socket.send_fds(server, [b'.'], [0, 1, 2])
        server.sendall(json.dumps(request).encode())
        server.shutdown(socket.SHUT_WR)
        status = b''.join(iter(lambda: server.recv(64), b''))
    sys.exit(int(status) if status else 1)  # nothing back: the fork died without a word (a signal)

# -----------------------------------------------------------------------------
# the server: a fork per call, which runs it as the interpreter's main would


def run(args):
    """args as python's: -> the exit code python would give."""
    import runpy
    import types
    try:
        if args[0] in ('-c', '-'):
            sys.argv = ['-c', *args[2:]] if args[0] == '-c' else args
            sys.path[0] = ''
            source = args[1] if args[0] == '-c' else sys.stdin.read()
            where = '<string>' if args[0] == '-c' else '<stdin>'
            main = sys.modules['__main__'] = types.ModuleType('__main__')
            exec(compile(source, where, 'exec'), main.__dict__)
        elif args[0] == '-m':
            sys.argv, sys.path[0] = [args[1], *args[2:]], os.getcwd()
            runpy.run_module(args[1], run_name='__main__', alter_sys=True)
        else:
            sys.argv, sys.path[0] = list(args), os.path.dirname(os.path.abspath(args[0]))
            runpy.run_path(args[0], run_name='__main__')
    except SystemExit as exit:  # as the interpreter reads sys.exit's argument
        if exit.code is None or isinstance(exit.code, int):
            return exit.code or 0
        print(exit.code, file=sys.stderr)
        return 1
    except BaseException as error:  # the script's own hook (one-line errors) or the traceback
        error = error.with_traceback(error.__traceback__.tb_next)  # from the call's frame on
        sys.excepthook(type(error), error, error.__traceback__)
        return 1
    return 0


def serve_one(connection):
    import atexit
    import signal
    for number in (signal.SIGCHLD, signal.SIGTERM):  # the server's handlers, not the call's
        signal.signal(number, signal.SIG_DFL)
    _, fds, _, _ = socket.recv_fds(connection, 1, 3)
    request = json.loads(b''.join(iter(lambda: connection.recv(1 << 16), b'')))
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request['cwd'])
    os.environ.clear()
    os.environ.update(request['env'])
    os.umask(request['umask'])
    code = run(request['args'])
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    connection.sendall(str(code).encode())
    os._exit(code)


def reap(*_):
    """Every finished fork waited for: its CPU time counts as the server's (and so as the test's
    that started it), as a python's would."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def serve(name):
    import signal
    import numpy  # noqa: F401  (what every job imports, once)
    import torch  # noqa: F401
    import torch._dynamo  # noqa: F401
    server = socket.socket(socket.AF_UNIX)
    server.bind('\0' + name)
    server.listen(64)
    signal.signal(signal.SIGCHLD, reap)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # its calls waited for, then gone (below)
    print('ready', flush=True)
    try:
        while True:
            connection, _ = server.accept()
            if os.fork() == 0:
                try:
                    server.close()
                    serve_one(connection)
                finally:
                    os._exit(1)  # never back into the loop, whatever happened
            connection.close()
    finally:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        while True:  # the calls still running
            try:
                os.wait()
            except ChildProcessError:
                break
        os._exit(0)  # without the second it takes to tear torch down


@contextmanager
def warm_python():
    """-> the command to give a script as PYTHON while a server runs. torch is imported in it with
    one thread, as the scripts export (OMP_NUM_THREADS is read when torch loads)."""
    if sys.platform != 'linux':
        yield sys.executable
        return
    name = f'warm-python-{os.getpid()}-{id(object())}'
    server = subprocess.Popen([sys.executable, HERE, 'serve', name], stdout=subprocess.PIPE,
                              text=True, env={**os.environ, 'OMP_NUM_THREADS': '1'},
                              start_new_session=True)
    try:
        assert server.stdout.readline() == 'ready\n', 'the warm python server did not start'
        yield f'{sys.executable} -S {HERE} {name}'
    finally:
        server.terminate()  # it waits for any call still running
        try:
            server.wait(timeout=600)  # a guard against a hang only
        except subprocess.TimeoutExpired:  # a call that hangs: it and the server
            os.killpg(server.pid, 9)
            server.wait()
        server.stdout.close()


if __name__ == '__main__':
    if sys.argv[1] == 'serve':
        serve(sys.argv[2])
    else:
        call(sys.argv[1], sys.argv[2:])
