"""The six networks of the interference study as a tiny IR with seeded random weights.

Layouts follow the papers and the TF object-detection configs (research/edge-ai.md section 3):
MobileNet v1 1.0 and v2 1.0 at 224 with 1001 classes (TF-slim), ResNet18/50 at 224 with 1000 classes
(torchvision; ResNet50 is v1.5, stride on the 3x3), SSD MobileNet v1/v2 at 300 with 91 classes and
1917 anchors (`ssd_mobilenet_v1_coco.config`: box predictor kernel 1; `ssd_mobilenet_v2_coco.config`:
depthwise extras, box predictor kernel 3). Batch normalisation is folded into the conv bias, as in a
deployed graph; `params_trainable` also counts the BN pair per channel (the torchvision/Keras convention).

Shapes are (C, H, W), batch 1. Padding is TensorFlow's SAME (asymmetric where the total is odd), in both
emitters, so the ONNX and TFLite files of one model compute the same function on the same weights.
Weights are He-scaled (uniform, variance 2/fan_in), so activations neither explode nor decay into denormals;
the SSD class head is biased to a prior of 0.01 (logit -4.6) so random weights do not fake a crowded scene.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field

import numpy as np

# Reference figures: MACs of conv + FC at the standard input; params of the deployed graph (BN folded).
# Each cites where it is published; the manifest's figures, read back from the built files, must match
# within 1% (tests/unit/test_ai_models.py).
REFERENCE: dict[str, dict] = {
    "mobilenet_v1": {
        "macs": 569e6,
        "params": 4.222e6,
        "source": "569 M mult-adds: Howard et al. 2017 (arXiv:1704.04861) table 8; 4.222 MParams: "
        "OpenVINO open_model_zoo models/public/mobilenet-v1-1.0-224-tf",
    },
    "mobilenet_v2": {
        "macs": 300e6,
        "params": 3.489e6,
        "params_trainable": 3_504_872 + 1281,  # torchvision at 1000 classes + the 1001st class (1280 + 1)
        "source": "300 M MACs: Sandler et al. 2018 (arXiv:1801.04381) table 4; 3.489 MParams: "
        "open_model_zoo models/public/mobilenet-v2-1.0-224; torchvision mobilenet_v2 3,504,872 params",
    },
    "ssd_mobilenet_v1": {
        "macs": 2.47e9 / 2,
        "params": 6.807e6,
        "source": "2.47 G ops: Xilinx Vitis-AI model zoo tf_ssdmobilenetv1_coco_300_300_2.47G; "
        "6.807 MParams: open_model_zoo models/public/ssd_mobilenet_v1_coco",
    },
    "ssd_mobilenet_v2": {
        "macs": 3.75e9 / 2,
        "params": 16.818e6,
        "source": "3.75 G ops: Vitis-AI model zoo tf_ssdmobilenetv2_coco_300_300_3.75G; "
        "16.818 MParams: open_model_zoo models/public/ssd_mobilenet_v2_coco",
    },
    "resnet18": {
        "macs": 1.81e9,
        "params_trainable": 11_689_512,
        "source": "torchvision resnet18: 11,689,512 params, 1.81 GFLOPS (multiply-adds)",
    },
    "resnet50": {
        "macs": 4.09e9,
        "params_trainable": 25_557_032,
        "source": "torchvision resnet50 (v1.5): 25,557,032 params, 4.09 GFLOPS (multiply-adds)",
    },
}

TASKS = {
    "mobilenet_v1": "classification",
    "mobilenet_v2": "classification",
    "resnet18": "classification",
    "resnet50": "classification",
    "ssd_mobilenet_v1": "detection",
    "ssd_mobilenet_v2": "detection",
}

# TFLite_Detection_PostProcess settings of a TF object-detection export (export_tflite_ssd_graph.py):
# box coder scales of the configs, class-agnostic ("fast") NMS, 10 detections.
SSD_POSTPROCESS = {
    "max_detections": 10,
    "max_classes_per_detection": 1,
    "detections_per_class": 100,
    "use_regular_nms": False,
    "nms_score_threshold": 1e-8,
    "nms_iou_threshold": 0.6,
    "y_scale": 10.0,
    "x_scale": 10.0,
    "h_scale": 5.0,
    "w_scale": 5.0,
}


def same_pads(size: int, k: int, s: int) -> tuple[int, int, int]:
    """TensorFlow SAME padding along one axis: (output size, pad before, pad after)."""
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return out, total // 2, total - total // 2


@dataclass
class Net:
    """A feed-forward network as a list of ops over named tensors, with its MAC and parameter counts."""

    name: str
    input_chw: tuple[int, int, int]
    seed: int = 0
    ops: list[dict] = field(default_factory=list)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    outputs: list[str] = field(default_factory=list)
    anchors: np.ndarray | None = None  # SSD: [n, 4] (ycenter, xcenter, height, width), normalised
    num_classes: int = 0
    macs: int = 0
    params: int = 0  # deployed graph: conv weights + bias (BN folded) + FC
    params_trainable: int = 0  # conv weights + 2 per BN channel (bias where no BN) + FC

    def __post_init__(self) -> None:
        # one stream per (seed, model): a model's weights do not depend on which others are built
        self.rng = np.random.default_rng([self.seed, zlib.crc32(self.name.encode())])
        self.shapes["input"] = tuple(self.input_chw)
        self._n = 0

    def _uniform(self, shape: tuple[int, ...], std: float) -> np.ndarray:
        """Uniform weights with standard deviation `std` (a third of the time of numpy's float32 normals)."""
        w = self.rng.random(shape, dtype=np.float32)
        w -= np.float32(0.5)
        w *= np.float32(std * math.sqrt(12.0))
        return w

    def _tensor(self, shape: tuple[int, ...], name: str | None = None) -> str:
        self._n += 1
        name = name or f"t{self._n}"
        self.shapes[name] = tuple(shape)
        return name

    def conv(
        self,
        x: str,
        cout: int,
        k: int,
        s: int = 1,
        groups: int = 1,
        act: str | None = "relu",
        bias: float = 0.0,
        bn: bool = True,
        wscale: float = 1.0,
    ) -> str:
        cin, h, w = self.shapes[x]
        ho, top, bottom = same_pads(h, k, s)
        wo, left, right = same_pads(w, k, s)
        weight = self._uniform(
            (cout, cin // groups, k, k), wscale * math.sqrt(2.0 / ((cin // groups) * k * k))
        )
        b = np.full((cout,), bias, np.float32)
        y = self._tensor((cout, ho, wo))
        self.ops.append(
            dict(
                op="conv",
                x=x,
                y=y,
                W=weight,
                B=b,
                k=k,
                s=s,
                pads=(top, left, bottom, right),
                groups=groups,
                act=act,
            )
        )
        self.macs += ho * wo * cout * (cin // groups) * k * k
        self.params += weight.size + cout
        self.params_trainable += weight.size + (2 * cout if bn else cout)
        return y

    def dw(self, x: str, k: int = 3, s: int = 1, act: str | None = "relu6") -> str:
        c = self.shapes[x][0]
        return self.conv(x, c, k, s, groups=c, act=act)

    def add(self, a: str, b: str, act: str | None = None) -> str:
        y = self._tensor(self.shapes[a])
        self.ops.append(dict(op="add", a=a, b=b, y=y, act=act))
        return y

    def maxpool(self, x: str, k: int = 3, s: int = 2) -> str:
        c, h, w = self.shapes[x]
        ho, top, bottom = same_pads(h, k, s)
        wo, left, right = same_pads(w, k, s)
        y = self._tensor((c, ho, wo))
        self.ops.append(dict(op="maxpool", x=x, y=y, k=k, s=s, pads=(top, left, bottom, right)))
        return y

    def gap_fc(self, x: str, n: int, softmax: bool = True) -> str:
        c = self.shapes[x][0]
        weight = self._uniform((n, c), math.sqrt(1.0 / c))
        y = self._tensor((n,), "predictions" if softmax else "logits")
        self.ops.append(dict(op="gap_fc", x=x, y=y, W=weight, B=np.zeros((n,), np.float32), softmax=softmax))
        self.macs += c * n
        self.params += weight.size + n
        self.params_trainable += weight.size + n
        return y

    def flat(self, x: str, last: int) -> str:
        """NHWC-order flatten of a head output to [H*W*A, last] (anchor-major, as TF exports it)."""
        c, h, w = self.shapes[x]
        y = self._tensor((h * w * c // last, last))
        self.ops.append(dict(op="flat", x=x, y=y, last=last))
        return y

    def concat(self, xs: list[str], sigmoid: bool = False) -> str:
        y = self._tensor((sum(self.shapes[x][0] for x in xs), self.shapes[xs[0]][1]))
        self.ops.append(dict(op="concat", xs=xs, y=y, sigmoid=sigmoid))
        return y


def _mobilenet_v1_body(net: Net, x: str) -> list[str]:
    x = net.conv(x, 32, 3, 2, act="relu6")
    feats = []
    blocks = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5
    for c, s in blocks + [(1024, 2), (1024, 1)]:
        x = net.conv(net.dw(x, 3, s), c, 1, act="relu6")
        feats.append(x)
    return feats  # feats[10] = Conv2d_11_pointwise, feats[12] = Conv2d_13_pointwise


def _mobilenet_v2_body(net: Net, x: str) -> tuple[str, dict[str, str]]:
    x = net.conv(x, 32, 3, 2, act="relu6")
    taps, layer = {}, 1
    settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2)]
    for t, c, n, s in settings + [(6, 320, 1, 1)]:
        for i in range(n):
            layer += 1
            cin = net.shapes[x][0]
            stride = s if i == 0 else 1
            h = x
            if t != 1:
                h = net.conv(h, cin * t, 1, act="relu6")
                taps[f"layer_{layer}/expansion_output"] = h
            h = net.conv(net.dw(h, 3, stride), c, 1, act=None)
            x = net.add(x, h) if stride == 1 and cin == c else h
    x = net.conv(x, 1280, 1, act="relu6")
    taps["layer_19"] = x
    return x, taps


def mobilenet_v1(seed: int = 0, num_classes: int = 1001) -> Net:
    net = Net("mobilenet_v1", (3, 224, 224), seed)
    net.outputs = [net.gap_fc(_mobilenet_v1_body(net, "input")[-1], num_classes)]
    return net


def mobilenet_v2(seed: int = 0, num_classes: int = 1001) -> Net:
    net = Net("mobilenet_v2", (3, 224, 224), seed)
    x, _ = _mobilenet_v2_body(net, "input")
    net.outputs = [net.gap_fc(x, num_classes)]
    return net


def resnet(depth: int, seed: int = 0, num_classes: int = 1000) -> Net:
    net = Net(f"resnet{depth}", (3, 224, 224), seed)
    x = net.maxpool(net.conv("input", 64, 7, 2))
    blocks = {18: [2, 2, 2, 2], 50: [3, 4, 6, 3]}[depth]
    for stage, (nb, width) in enumerate(zip(blocks, [64, 128, 256, 512], strict=True)):
        for i in range(nb):
            s = 2 if i == 0 and stage > 0 else 1
            cin = net.shapes[x][0]
            if depth == 18:
                out = width
                h = net.conv(net.conv(x, width, 3, s), width, 3, 1, act=None)
            else:  # bottleneck with the stride on the 3x3 (torchvision "v1.5")
                out = width * 4
                h = net.conv(net.conv(net.conv(x, width, 1), width, 3, s), out, 1, act=None)
            shortcut = net.conv(x, out, 1, s, act=None) if s != 1 or cin != out else x
            x = net.add(h, shortcut, act="relu")
    net.outputs = [net.gap_fc(x, num_classes)]
    return net


def ssd_anchors(feature_sizes: list[int], min_scale: float = 0.2, max_scale: float = 0.95) -> np.ndarray:
    """The TF OD API `ssd_anchor_generator` of both configs: 6 layers, aspect ratios 1, 2, 1/2, 3, 1/3 plus
    an interpolated scale, 3 anchors in the lowest layer (`reduce_boxes_in_lowest_layer`). Rows are
    (ycenter, xcenter, height, width), ordered by (y, x, anchor) like the box predictor's NHWC output."""
    n = len(feature_sizes)
    scales = [min_scale + (max_scale - min_scale) * i / (n - 1) for i in range(n)] + [1.0]
    rows = []
    for layer, size in enumerate(feature_sizes):
        if layer == 0:
            kinds = [(0.1, 1.0), (scales[0], 2.0), (scales[0], 0.5)]
        else:
            kinds = [(scales[layer], ar) for ar in (1.0, 2.0, 0.5, 3.0, 1.0 / 3.0)]
            kinds.append((math.sqrt(scales[layer] * scales[layer + 1]), 1.0))
        for y in range(size):
            for x in range(size):
                for scale, ar in kinds:
                    rows.append(
                        ((y + 0.5) / size, (x + 0.5) / size, scale / math.sqrt(ar), scale * math.sqrt(ar))
                    )
    return np.array(rows, np.float32)


def _ssd_tail(net: Net, f1: str, f2: str, head_k: int, extras_depthwise: bool, num_classes: int = 91) -> Net:
    feats, x = [f1, f2], f2
    for depth in [512, 256, 256, 128]:  # multi_resolution_feature_maps: 1x1 (depth/2) then 3x3 stride 2
        x = net.conv(x, depth // 2, 1, act="relu6")
        if extras_depthwise:
            x = net.conv(net.dw(x, 3, 2), depth, 1, act="relu6")
        else:
            x = net.conv(x, depth, 3, 2, act="relu6")
        feats.append(x)
    boxes, scores = [], []
    for i, f in enumerate(feats):
        a = 3 if i == 0 else 6
        boxes.append(net.flat(net.conv(f, a * 4, head_k, act=None, bn=False), 4))
        head = net.conv(f, a * num_classes, head_k, act=None, bias=-4.6, bn=False, wscale=0.1)
        scores.append(net.flat(head, num_classes))
    net.outputs = [net.concat(boxes), net.concat(scores, sigmoid=True)]
    net.num_classes = num_classes
    net.anchors = ssd_anchors([net.shapes[f][1] for f in feats])
    if len(net.anchors) != net.shapes[net.outputs[0]][0]:
        raise AssertionError(
            f"{net.name}: {len(net.anchors)} anchors for {net.shapes[net.outputs[0]][0]} boxes"
        )
    return net


def ssd_mobilenet_v1(seed: int = 0) -> Net:
    net = Net("ssd_mobilenet_v1", (3, 300, 300), seed)
    feats = _mobilenet_v1_body(net, "input")
    return _ssd_tail(net, feats[10], feats[12], head_k=1, extras_depthwise=False)


def ssd_mobilenet_v2(seed: int = 0) -> Net:
    net = Net("ssd_mobilenet_v2", (3, 300, 300), seed)
    _, taps = _mobilenet_v2_body(net, "input")
    return _ssd_tail(
        net, taps["layer_15/expansion_output"], taps["layer_19"], head_k=3, extras_depthwise=True
    )


BUILDERS = {
    "mobilenet_v1": mobilenet_v1,
    "mobilenet_v2": mobilenet_v2,
    "ssd_mobilenet_v1": ssd_mobilenet_v1,
    "ssd_mobilenet_v2": ssd_mobilenet_v2,
    "resnet18": lambda seed=0: resnet(18, seed),
    "resnet50": lambda seed=0: resnet(50, seed),
}


def build_net(name: str, seed: int = 0) -> Net:
    return BUILDERS[name](seed=seed)
