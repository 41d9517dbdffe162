"""Train a multilayer perceptron on scikit-learn's handwritten digits with DirectML operators.

    python examples/train_mlp.py                      # 30 epochs on the default adapter
    python examples/train_mlp.py --steps 5 --device-profile nvidia-h100

Every part of a training step is a DirectML operator in one dmlpy graph: GEMM (forward with
a fused RELU, and the backward products from its transposes), LOG_SOFTMAX and SOFTMAX for the
cross-entropy and its gradient, ACTIVATION_RELU_GRAD, REDUCE, ARGMAX for the accuracy and
ADAM_OPTIMIZER. The graph is compiled once and bound once per minibatch position; parameters,
moments and the step count stay on the device, updated in place, and each step is one
submission. Weights start from RANDOM_GENERATOR (Philox 4x32-10) keyed by --seed, so a seed
gives the same bits on every device: the last line's hash says so. See docs/training.md.

Needs scikit-learn (pip install dmlpy[examples]); --plot needs matplotlib; --check-torch
compares the first step's gradients with torch.autograd where PyTorch is installed, else
with a float64 NumPy model of the same network.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time

import numpy as np

import dmlpy as dml
from dmlpy import graph as G

F32 = dml.TensorDataType.FLOAT32
I32 = dml.TensorDataType.INT32
TRANSPOSE = dml.MatrixTransform.TRANSPOSE
LAYERS = (64, 128, 10)  # 8x8 pixels, hidden units, classes
TEST_FRACTION = 0.2
SPLIT_SEED = 0  # the train/test split is fixed, whatever --seed is
LEARNING_RATE = 0.003
ONE_HOT_VALUES = np.array([0.0, 1.0], np.float32)  # ONE_HOT's (off, on)


def desc(*sizes, strides=None, data_type=F32) -> dml.BufferTensorDesc:
    """A 4-D tensor desc (GEMM takes 2 to 4 dims, ADAM_OPTIMIZER exactly 4)."""
    return dml.BufferTensorDesc(data_type, (1,) * (4 - len(sizes)) + tuple(sizes), strides)


def load_digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    try:
        from sklearn.datasets import load_digits as sklearn_digits
    except ImportError:
        sys.exit("train_mlp.py needs scikit-learn: pip install dmlpy[examples] (or pip install scikit-learn)")
    digits = sklearn_digits()
    images = (digits.data / 16.0).astype(np.float32)
    labels = digits.target.astype(np.int32)
    order = np.random.default_rng(SPLIT_SEED).permutation(len(labels))
    test = order[:round(TEST_FRACTION * len(labels))]
    train = order[len(test):]
    return images[train], labels[train], images[test], labels[test]


def initial_parameters(device: dml.Device, seed: int) -> list[np.ndarray]:
    """Per layer, weights uniform in [-limit, limit) (Glorot's limit, sqrt(6 / (fan_in +
    fan_out))) from RANDOM_GENERATOR's bits made floats on the device (the top 24 bits, exact
    in FP32, then one scale and bias), and zero biases."""
    state = np.array([0, 0, 0, 0, seed & 0xFFFFFFFF, seed >> 32 & 0xFFFFFFFF], np.uint32)
    parameters = []
    for fan_in, fan_out in zip(LAYERS, LAYERS[1:]):
        bits, state = dml.random_generator(state, (fan_in, fan_out), device=device)
        top = dml.cast(dml.right_shift(bits, np.uint32(8), device=device), np.float32, device=device)
        limit = np.float32(np.sqrt(6.0 / (fan_in + fan_out)))
        weights = dml.element_wise_identity(top, scale_bias=dml.ScaleBias(2 * limit / 2**24, -limit), device=device)
        parameters += [weights.reshape(1, 1, fan_in, fan_out), np.zeros((1, 1, 1, fan_out), np.float32)]
    return parameters


class Network:
    """The forward pass over `batch` rows as graph values, and with `training` the loss and
    every parameter's gradient. `names` lists the graph inputs it made, in binding order."""

    def __init__(self, builder: dml.GraphBuilder, batch: int, training: bool):
        self.builder, self.names = builder, []
        images = self.input("images", desc(batch, LAYERS[0]))
        weights, bias_rows = [], []
        for layer, (fan_in, fan_out) in enumerate(zip(LAYERS, LAYERS[1:])):
            weights.append(self.input(f"w{layer}", desc(fan_in, fan_out)))
            # The bias read as `batch` rows: the bias's own buffer, through a zero stride.
            bias_rows.append(self.input(f"b{layer} rows", desc(batch, fan_out, strides=(0, 0, 0, 1))))
        relu = dml.ActivationReluOperatorDesc(None, None)  # the fused form: no tensors
        hidden = G.gemm(images, weights[0], bias_rows[0], beta=1.0, fused_activation=relu)
        self.logits = G.gemm(hidden, weights[1], bias_rows[1], beta=1.0)
        if not training:
            return
        self.labels = self.input("labels", desc(batch, 1, data_type=I32))
        # The targets' one-hot rows, made on the device: ONE_HOT of the labels with (off, on) = (0, 1).
        target = G.one_hot(self.labels, self.input("one hot values", desc(1, 2)), axis=3, depth=LAYERS[-1])
        # loss = -sum(targets * log_softmax(logits)) / batch, whose gradient with respect to
        # the logits is (softmax(logits) - targets) / batch.
        picked = G.multiply(target, G.log_softmax1(self.logits, axes=(3,)))
        self.loss = G.element_wise_identity(G.reduce(picked, function="SUM", axes=(0, 1, 2, 3)),
                                            scale_bias=dml.ScaleBias(-1.0 / batch, 0.0))
        d_logits = G.element_wise_identity(G.subtract(G.softmax1(self.logits, axes=(3,)), target),
                                           scale_bias=dml.ScaleBias(1.0 / batch, 0.0))
        d_hidden = G.relu_grad(hidden, G.gemm(d_logits, weights[1], trans_b=TRANSPOSE), use_dst=True)
        # dW = X^T dY and db = the column sums of dY, layer by layer (w0, b0, w1, b1).
        self.gradients = [G.gemm(images, d_hidden, trans_a=TRANSPOSE), G.reduce(d_hidden, function="SUM", axes=(2,)),
                          G.gemm(hidden, d_logits, trans_a=TRANSPOSE), G.reduce(d_logits, function="SUM", axes=(2,))]

    def input(self, name: str, tensor: dml.BufferTensorDesc) -> dml.GraphValue:
        self.names.append(name)
        return self.builder.input(tensor)


class Buffers:
    """Named device buffers, and their bindings in a graph's input order."""

    def __init__(self, device: dml.Device):
        self.device, self.named = device, {}

    def add(self, name: str, array: np.ndarray | None = None, size: int = 0) -> dml.Buffer:
        buffer = self.device.create_buffer(array.nbytes if array is not None else size)
        if array is not None:
            buffer.write(np.ascontiguousarray(array).reshape(-1))
        self.named[name] = buffer
        return buffer

    def bindings(self, names: list[str], windows: dict[str, dml.BufferBinding] | None = None) -> list:
        windows = windows or {}
        # A bias's rows view binds the bias's buffer.
        return [windows.get(name) or self.named[name.removesuffix(" rows")] for name in names]


PARAMETERS = ("w0", "b0", "w1", "b1")


class Trainer:
    """The training step compiled once; its state resident on the device and updated in place:
    parameters, both moments, the step count T and the epoch's loss and correct-prediction sums."""

    def __init__(self, device: dml.Device, parameters: list[np.ndarray], batch: int, steps_per_epoch: int,
                 learning_rate: float):
        self.device, self.batch = device, batch
        builder = dml.GraphBuilder(device)
        net = Network(builder, batch, training=True)
        values = {name: net.input(name, dml.BufferTensorDesc(F32, array.shape))
                  for name, array in zip(PARAMETERS[1::2], parameters[1::2])}  # the biases, as Adam updates them
        step = net.input("step", desc(1, 1))
        loss_sum, correct_sum = net.input("loss sum", desc(1, 1)), net.input("correct sum", desc(1, 1))
        weights = {name: builder.inputs[net.names.index(name)] for name in PARAMETERS[::2]}
        outputs, written = [], []
        for name, gradient in zip(PARAMETERS, net.gradients):
            parameter = weights.get(name) or values[name]
            first = net.input(f"{name} m", parameter.desc)
            second = net.input(f"{name} v", parameter.desc)
            outputs += G.adam_optimizer(parameter, first, second, gradient, step, learning_rate=learning_rate)
            written += [name, f"{name} m", f"{name} v"]
        hits = G.cast(G.equal(G.argmax(net.logits, axes=(3,)), net.labels), np.float32)  # INT32, as ARGMAX writes
        outputs += [G.add(loss_sum, net.loss), G.add(correct_sum, G.reduce(hits, function="SUM", axes=(0, 1, 2, 3))),
                    G.element_wise_identity(step, scale_bias=dml.ScaleBias(1.0, 1.0))]  # T + 1, the last kernel
        written += ["loss sum", "correct sum", "step"]
        self.compiled = builder.build(outputs)

        self.buffers = Buffers(device)
        for name, array in zip(PARAMETERS, parameters):
            self.buffers.add(name, array)
            self.buffers.add(f"{name} m", np.zeros_like(array))
            self.buffers.add(f"{name} v", np.zeros_like(array))
        self.buffers.add("step", np.ones(1, np.float32))  # Adam's T counts from 1
        self.buffers.add("one hot values", ONE_HOT_VALUES)
        for name in ("loss sum", "correct sum"):
            self.buffers.add(name, np.zeros(1, np.float32))
        rows = steps_per_epoch * batch
        widths = {"images": LAYERS[0], "labels": 1}
        for name, width in widths.items():
            self.buffers.add(name, size=rows * width * 4)
        size = self.compiled.binding_properties.temporary_resource_size
        temporary = device.create_buffer(size) if size else None
        outputs = self.buffers.bindings(written)  # every output over the input it updates
        # One binding table per minibatch position, built once: a step replays one of them.
        self.tables = []
        for k in range(steps_per_epoch):
            windows = {name: dml.BufferBinding(self.buffers.named[name], k * batch * width * 4, batch * width * 4)
                       for name, width in widths.items()}
            self.tables.append(device.create_binding_table(
                self.compiled, inputs=self.buffers.bindings(net.names, windows), outputs=outputs, temporary=temporary))

    def epoch(self, images: np.ndarray, labels: np.ndarray, steps: int, progress) -> tuple[float, float]:
        """Upload the epoch's shuffled images and labels once, then run `steps` steps (one submission
        each); returns the mean loss and the training accuracy over them."""
        rows = len(self.tables) * self.batch
        named = self.buffers.named
        named["images"].write(np.ascontiguousarray(images[:rows]).reshape(-1))
        named["labels"].write(np.ascontiguousarray(labels[:rows]))
        for name in ("loss sum", "correct sum"):
            named[name].write(np.zeros(1, np.float32))
        for k in range(steps):
            self.device.execute(self.tables[k])
            progress(k + 1, steps)
        loss, correct = (float(named[name].read(np.float32, 1)[0]) for name in ("loss sum", "correct sum"))
        return loss / steps, correct / (steps * self.batch)

    def parameters(self) -> list[np.ndarray]:
        return [self.buffers.named[name].read(np.float32, self.buffers.named[name].size_in_bytes // 4)
                for name in PARAMETERS]


def run_graph(device: dml.Device, network: Network, outputs: list, arrays: dict[str, np.ndarray],
              parameters: list[np.ndarray]) -> list[np.ndarray]:
    """Build a graph of `outputs`, bind `arrays` and `parameters` to its inputs, run it once."""
    compiled = network.builder.build(outputs)
    buffers = Buffers(device)
    for name, array in [*zip(PARAMETERS, parameters), *arrays.items()]:
        buffers.add(name, array)
    results = [device.create_buffer(tensor=desc_) for _, desc_ in compiled.output_tensors]
    size = compiled.binding_properties.temporary_resource_size
    temporary = device.create_buffer(size) if size else None
    device.execute(device.create_binding_table(compiled, inputs=buffers.bindings(network.names), outputs=results,
                                               temporary=temporary))
    return [buffer.read() for buffer in results]


def predict(device: dml.Device, parameters: list[np.ndarray], images: np.ndarray) -> np.ndarray:
    network = Network(dml.GraphBuilder(device), len(images), training=False)
    (classes,) = run_graph(device, network, [G.argmax(network.logits, axes=(3,))], {"images": images}, parameters)
    return classes.reshape(-1)


def first_gradients(device: dml.Device, parameters: list[np.ndarray], images: np.ndarray,
                    labels: np.ndarray) -> list[np.ndarray]:
    network = Network(dml.GraphBuilder(device), len(images), training=True)
    arrays = {"images": images, "labels": labels, "one hot values": ONE_HOT_VALUES}
    return run_graph(device, network, network.gradients, arrays, parameters)


def reference_gradients(parameters: list[np.ndarray], images: np.ndarray, labels: np.ndarray) -> tuple[str, list]:
    """The same network's gradients by torch.autograd in FP32 where PyTorch is installed, else
    by a float64 NumPy model."""
    w0, b0, w1, b1 = (p.reshape(p.shape[-2:]) for p in parameters)
    try:
        import torch
    except ImportError:
        x, (w0, b0, w1, b1) = images.astype(np.float64), (p.astype(np.float64) for p in (w0, b0, w1, b1))
        hidden = np.maximum(x @ w0 + b0, 0)
        logits = hidden @ w1 + b1
        exp = np.exp(logits - logits.max(axis=1, keepdims=True))
        d_logits = (exp / exp.sum(axis=1, keepdims=True) - np.eye(LAYERS[-1])[labels]) / len(x)
        d_hidden = (d_logits @ w1.T) * (hidden > 0)
        return "a float64 NumPy model", [x.T @ d_hidden, d_hidden.sum(0), hidden.T @ d_logits, d_logits.sum(0)]
    tensors = [torch.tensor(p, requires_grad=True) for p in (w0, b0, w1, b1)]
    logits = torch.relu(torch.tensor(images) @ tensors[0] + tensors[1]) @ tensors[2] + tensors[3]
    torch.nn.functional.cross_entropy(logits, torch.tensor(labels.astype(np.int64))).backward()
    return "torch.autograd (FP32)", [t.grad.numpy() for t in tensors]


def ulps(actual: np.ndarray, expected: np.ndarray) -> tuple[float, float]:
    """The largest error in ULP of each element's own value, and in ULP of the tensor's
    largest magnitude (what a sum with cancellation can promise)."""
    actual, expected = actual.astype(np.float64).reshape(-1), np.asarray(expected, np.float64).reshape(-1)
    error = np.abs(actual - expected)
    own = np.spacing(np.abs(expected).astype(np.float32)).astype(np.float64)
    scale = float(np.spacing(np.float32(np.abs(expected).max())))
    return float((error / own).max()), float(error.max() / scale)


def numpy_step(state: dict, images: np.ndarray, targets: np.ndarray, step: int, learning_rate: float) -> None:
    """The same training step in plain NumPy, FP32 (the benchmark's host baseline)."""
    w0, b0, w1, b1 = state["parameters"]
    hidden = np.maximum(images @ w0 + b0, 0)
    logits = hidden @ w1 + b1
    exp = np.exp(logits - logits.max(axis=1, keepdims=True))
    d_logits = (exp / exp.sum(axis=1, keepdims=True) - targets) / np.float32(len(images))
    d_hidden = (d_logits @ w1.T) * (hidden > 0)
    gradients = (images.T @ d_hidden, d_hidden.sum(0), hidden.T @ d_logits, d_logits.sum(0))
    beta1, beta2 = np.float32(0.9), np.float32(0.999)
    correction = np.float32(learning_rate * np.sqrt(1 - 0.999**step) / (1 - 0.9**step))
    for parameter, first, second, gradient in zip(state["parameters"], state["m"], state["v"], gradients):
        first *= beta1
        first += (1 - beta1) * gradient
        second *= beta2
        second += (1 - beta2) * gradient * gradient
        parameter -= correction * first / (np.sqrt(second) + np.float32(1e-8))


def torch_step(state: dict, images, targets, step: int) -> None:
    """The same step in PyTorch on the CPU (autograd and torch.optim.Adam)."""
    import torch

    optimizer, tensors = state["optimizer"], state["tensors"]
    optimizer.zero_grad()
    hidden = torch.relu(images @ tensors[0] + tensors[1])
    loss = torch.nn.functional.cross_entropy(hidden @ tensors[2] + tensors[3], targets)
    loss.backward()
    optimizer.step()


def benchmark(trainer: Trainer, parameters: list[np.ndarray], images: np.ndarray, labels: np.ndarray,
              rounds: int) -> None:
    """Step time (one minibatch), interleaved round by round: dmlpy's execute, a bare kp
    replay of the same recorded submission (the host cost's yardstick), NumPy and PyTorch."""
    batch = trainer.batch
    trainer.epoch(images, labels, 1, lambda k, total: None)  # the epoch's data resident, every kernel warm
    table = trainer.tables[0]
    batch_images, targets = images[:batch], np.eye(LAYERS[-1], dtype=np.float32)[labels[:batch]]
    matrices = [p.reshape(p.shape[-2:]).copy() for p in parameters]
    numpy_state = {"parameters": matrices, "m": [np.zeros_like(p) for p in matrices],
                   "v": [np.zeros_like(p) for p in matrices]}
    runners = {"dmlpy (device.execute)": lambda k: trainer.device.execute(table),
               "bare kp replay": lambda k: table.submission.sequence.eval(),
               "NumPy (FP32)": lambda k: numpy_step(numpy_state, batch_images, targets, k + 1, LEARNING_RATE)}
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        tensors = [torch.tensor(p, requires_grad=True) for p in matrices]
        torch_state = {"tensors": tensors, "optimizer": torch.optim.Adam(tensors, lr=LEARNING_RATE)}
        torch_images, torch_labels = torch.tensor(batch_images), torch.tensor(labels[:batch].astype(np.int64))
        runners[f"PyTorch {torch.__version__} CPU ({torch.get_num_threads()} threads)"] = \
            lambda k: torch_step(torch_state, torch_images, torch_labels, k + 1)
    per_round = 20
    times: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(rounds):
        for name, run in runners.items():
            started = time.perf_counter()
            for k in range(per_round):
                run(k)
            times[name].append((time.perf_counter() - started) / per_round)
    median = {name: float(np.median(values)) * 1000 for name, values in times.items()}
    print(f"step time, batch {batch}, median of {rounds} interleaved rounds of {per_round} steps:")
    for name, milliseconds in median.items():
        print(f"  {name}: {milliseconds:.3f} ms")
    if torch is None:
        print("  PyTorch: not installed")
    print(f"host cost: execute / bare replay = {median['dmlpy (device.execute)'] / median['bare kp replay']:.3f}")


def weights_hash(parameters: list[np.ndarray]) -> str:
    digest = hashlib.sha256()
    for array in parameters:
        digest.update(np.ascontiguousarray(array, np.float32).tobytes())
    return digest.hexdigest()


def plot(path: str, history: list[tuple[float, float]]) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("--plot needs matplotlib: pip install dmlpy[examples]")
    epochs = np.arange(1, len(history) + 1)
    figure, (loss_axes, accuracy_axes) = plt.subplots(1, 2, figsize=(9, 3.5))
    loss_axes.plot(epochs, [loss for loss, _ in history])
    loss_axes.set(xlabel="epoch", ylabel="training loss (cross-entropy)")
    accuracy_axes.plot(epochs, [accuracy for _, accuracy in history])
    accuracy_axes.set(xlabel="epoch", ylabel="training accuracy")
    figure.suptitle("dmlpy: a 64-128-10 MLP on scikit-learn's digits, DirectML operators only")
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--steps", type=int, default=None, help="stop after this many training steps in all")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0, help="the weights' RANDOM_GENERATOR key and the shuffles")
    parser.add_argument("--plot", metavar="PATH", help="write a PNG of the loss and accuracy per epoch")
    parser.add_argument("--device-profile", help="plan kernels as for this device profile (dmlpy.list_device_profiles)")
    parser.add_argument("--adapter", help="adapter index or name (default: DMLPY_ADAPTER, else the first GPU)")
    parser.add_argument("--bench", type=int, metavar="ROUNDS", help="time a step against NumPy and PyTorch, then stop")
    parser.add_argument("--check-torch", action="store_true",
                        help="compare the first step's gradients with torch.autograd (or a float64 NumPy model)")
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.batch < 1 or (args.steps is not None and args.steps < 1) or args.seed < 0:
        parser.error("--epochs, --batch and --steps must be at least 1, --seed at least 0")
    train_images, train_labels, test_images, test_labels = load_digits()
    steps_per_epoch = len(train_labels) // args.batch
    if steps_per_epoch == 0:
        parser.error(f"--batch {args.batch} is larger than the {len(train_labels)} training images")
    adapter = int(args.adapter) if args.adapter is not None and args.adapter.isdigit() else args.adapter
    with dml.create_device(adapter=adapter, profile=args.device_profile) as device:
        print(f"device: {device.adapter_name}{f' (profile {args.device_profile})' if args.device_profile else ''}")
        parameters = initial_parameters(device, args.seed)
        shuffles = np.random.default_rng(args.seed)
        if args.check_torch:
            order = shuffles.permutation(len(train_labels))[:args.batch]
            mine = first_gradients(device, parameters, train_images[order], train_labels[order])
            source, expected = reference_gradients(parameters, train_images[order], train_labels[order])
            print(f"first step's gradients against {source}:")
            for name, actual, reference in zip(PARAMETERS, mine, expected):
                own, scaled = ulps(actual, reference)
                print(f"  d{name}: at most {own:.1f} ULP of each element, {scaled:.2f} ULP of the largest")
            return 0
        trainer = Trainer(device, parameters, args.batch, steps_per_epoch, LEARNING_RATE)
        if args.bench:
            benchmark(trainer, parameters, train_images, train_labels, args.bench)
            return 0
        history, done, started = [], 0, time.perf_counter()
        for epoch in range(1, args.epochs + 1):
            steps = min(steps_per_epoch, args.steps - done) if args.steps is not None else steps_per_epoch
            order = shuffles.permutation(len(train_labels))

            def progress(k, total, epoch=epoch):
                if sys.stderr.isatty():
                    filled = 20 * k // total
                    sys.stderr.write(f"\repoch {epoch}/{args.epochs} [{'#' * filled}{'.' * (20 - filled)}] {k}/{total}")

            loss, accuracy = trainer.epoch(train_images[order], train_labels[order], steps, progress)
            if sys.stderr.isatty():
                sys.stderr.write("\r\x1b[K")
            history.append((loss, accuracy))
            done += steps
            print(f"epoch {epoch}/{args.epochs}: {steps} steps, loss {loss:.4f}, accuracy {accuracy:.4f}")
            if args.steps is not None and done >= args.steps:
                break
        elapsed = time.perf_counter() - started
        print(f"{done} steps in {elapsed:.2f} s ({1000 * elapsed / done:.2f} ms a step, one submission each)")
        final = trainer.parameters()
        predicted = predict(device, [p.reshape(q.shape) for p, q in zip(final, parameters)], test_images)
    if args.plot:
        plot(args.plot, history)
        print(f"plot: {args.plot}")
    print(f"test accuracy: {float(np.mean(predicted == test_labels)):.4f}")
    print(f"weights sha256: {weights_hash(final)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
