"""The state a training loop keeps on the device (docs/ownership.md, "Training state"): a
graph bound with its outputs over its inputs, replayed step after step. Each case runs in a
child process, so a crash or a hang fails one test: a parameter buffer destroyed under the
table, the device closed while a step runs, a host write racing a step, a fork between
steps, and the table dropped by the garbage collector."""

from child import assert_clean, run_child

# A step: w' = w + x (a parameter updated in place by the last kernel), y = tanh(w) read first.
STEP = """
device = dml.create_device()
desc = dml.BufferTensorDesc(dml.TensorDataType.FLOAT32, (1, 1, 64, 64))
builder = dml.GraphBuilder(device)
w, x = builder.input(desc), builder.input(desc)
y = dml.graph.relu(w)
compiled = builder.build([dml.graph.add(y, x), y])  # relu(w) + x over w, relu(w) beside
weights = device.create_buffer(tensor=desc)
step = device.create_buffer(tensor=desc)
seen = device.create_buffer(tensor=desc)
weights.write(np.full(64 * 64, 1.0, np.float32))
step.write(np.full(64 * 64, 0.5, np.float32))
size = compiled.binding_properties.temporary_resource_size
temporary = device.create_buffer(size) if size else None
table = device.create_binding_table(compiled, inputs=[weights, step], outputs=[weights, seen], temporary=temporary)
"""


def test_a_parameter_destroyed_under_the_table_raises_instead_of_crashing():
    result = run_child(STEP + """
device.execute(table)
weights.destroy()
try:
    device.execute(table)
except dml.DeviceRemovedError as error:
    print("refused:", "destroyed" in str(error))
print("ok")
""")
    assert_clean(result)
    assert "refused: True" in result.stdout


def test_close_while_a_step_runs_waits_for_it():
    result = run_child(STEP + """
for _ in range(3):
    device.execute(table)
execution = device.execute(table, wait=False)
device.close()
print("done:", execution.done)
try:
    weights.read()
except dml.DeviceRemovedError:
    print("closed")
print("ok")
""")
    assert_clean(result)
    assert "done: True" in result.stdout and "closed" in result.stdout


def test_a_host_write_racing_the_steps_lands_between_them():
    """Another thread overwrites the parameters while steps run: each write waits for the step
    in flight, so the buffer is always a whole number of steps after some write, never torn."""
    result = run_child(STEP + """
stop = threading.Event()
def writer():
    while not stop.is_set():
        weights.write(np.full(64 * 64, 1.0, np.float32))
thread = threading.Thread(target=writer)
thread.start()
for _ in range(50):
    device.execute(table, wait=False)
stop.set()
thread.join()
device.execute(table)
values = weights.read(np.float32, 64 * 64)
print("uniform:", bool(np.all(values == values[0])), "whole steps:", float(values[0] - 1.0) % 0.5 == 0.0)
print("ok")
""")
    assert_clean(result)
    assert "uniform: True whole steps: True" in result.stdout


def test_fork_between_steps_leaves_the_parent_training():
    result = run_child(STEP + """
device.execute(table)
pid = os.fork()
if pid == 0:
    try:
        device.execute(table)
        os._exit(3)
    except dml.DeviceRemovedError:
        os._exit(0)
_, status = os.waitpid(pid, 0)
print("child refused:", os.waitstatus_to_exitcode(status) == 0)
device.execute(table)
print("parent:", float(weights.read(np.float32, 1)[0]))
print("ok")
""")
    assert_clean(result)
    assert "child refused: True" in result.stdout and "parent: 2.0" in result.stdout


def test_a_dropped_table_frees_nothing_the_caller_still_holds():
    result = run_child(STEP + """
device.execute(table)
del table
gc.collect()
weights.write(np.full(64 * 64, 3.0, np.float32))
again = device.create_binding_table(compiled, inputs=[weights, step], outputs=[weights, seen], temporary=temporary)
device.execute(again)
print("after:", float(weights.read(np.float32, 1)[0]), float(seen.read(np.float32, 1)[0]))
print("ok")
""")
    assert_clean(result)
    assert "after: 3.5 3.0" in result.stdout
