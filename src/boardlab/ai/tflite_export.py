"""TFLite emitter and graph statistics, with the flatbuffer schema that ships inside `ai-edge-litert`.

NHWC tensors; conv weights OHWI, depthwise [1, kh, kw, C]; BN folded into the bias; activations fused
into the ops. SSD graphs end in the `TFLite_Detection_PostProcess` custom op with the settings of a TF
object-detection export (nets.SSD_POSTPROCESS), which LiteRT's builtin resolver provides.
"""

from __future__ import annotations

import numpy as np

from boardlab.ai.nets import SSD_POSTPROCESS, Net

_DTYPES = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 7: "int16", 9: "int8"}


def _schema():
    from ai_edge_litert import schema_py_generated as fb

    return fb


def to_tflite(net: Net) -> bytes:
    """The network as a TFLite flatbuffer: one operator per op of `net.ops` (the emitters below), then the
    SSD post-processing op where the net has anchors."""
    import flatbuffers

    g = _Graph(net, _schema())
    g.tensor("input", g.nhwc("input"))
    for i, o in enumerate(net.ops):
        _EMITTERS[o["op"]](g, o, f"{o['op']}_{i}")
    outs = [g.index[t] for t in net.outputs]
    if net.anchors is not None:
        outs = _ssd_postprocess(g, outs)
    g.sg.inputs, g.sg.outputs = [g.index["input"]], outs
    g.model.subgraphs = [g.sg]
    weight_bytes = sum(len(b.data) for b in g.model.buffers if b.data is not None)
    builder = flatbuffers.Builder(weight_bytes + (1 << 20))  # one allocation instead of ~17 doublings
    builder.Finish(g.model.Pack(builder), file_identifier=b"TFL3")
    return builder.Output()


class _Graph:
    """The model being built: its buffers, operator codes and one subgraph, with the tensors by name."""

    def __init__(self, net: Net, fb) -> None:
        self.net, self.fb = net, fb
        self.model = fb.ModelT()
        self.model.version = 3
        self.model.description = (
            f"boardlab generated {net.name}: architecture-faithful, seeded random weights"
        )
        self.model.buffers = [fb.BufferT()]  # buffer 0: the empty sentinel
        self.model.operatorCodes = []
        self.sg = fb.SubGraphT()
        self.sg.tensors, self.sg.operators, self.sg.name = [], [], "main"
        self.index: dict[str, int] = {}
        self.codes: dict[tuple, int] = {}
        self.act_fn = {
            None: fb.ActivationFunctionType.NONE,
            "relu": fb.ActivationFunctionType.RELU,
            "relu6": fb.ActivationFunctionType.RELU6,
        }

    def tensor(self, name: str, shape, ttype=None, data: np.ndarray | None = None) -> int:
        fb = self.fb
        t = fb.TensorT()
        t.name, t.shape, t.buffer = name, list(shape), 0
        t.type = fb.TensorType.FLOAT32 if ttype is None else ttype
        if data is not None:
            b = fb.BufferT()
            b.data = np.frombuffer(np.ascontiguousarray(data).tobytes(), np.uint8)
            self.model.buffers.append(b)
            t.buffer = len(self.model.buffers) - 1
        self.sg.tensors.append(t)
        self.index[name] = len(self.sg.tensors) - 1
        return self.index[name]

    def nhwc(self, t: str) -> list[int]:
        s = self.net.shapes[t]
        return [1, s[1], s[2], s[0]] if len(s) == 3 else [1, *s]

    def activation(self, t: str) -> int:
        """The activation tensor `t`, made the first time an op writes or reads it."""
        return self.index[t] if t in self.index else self.tensor(t, self.nhwc(t))

    def code(self, builtin: int, custom: str | None = None) -> int:
        key = (builtin, custom)
        if key not in self.codes:
            oc = self.fb.OperatorCodeT()
            oc.builtinCode, oc.deprecatedBuiltinCode, oc.version = builtin, min(builtin, 127), 1
            if custom:
                oc.customCode = custom
            self.model.operatorCodes.append(oc)
            self.codes[key] = len(self.model.operatorCodes) - 1
        return self.codes[key]

    def op(self, builtin, ins, outs, otype=0, opts=None, custom=None, custom_opts=None) -> None:
        o = self.fb.OperatorT()
        o.opcodeIndex = self.code(builtin, custom)
        o.inputs, o.outputs = list(ins), list(outs)
        o.builtinOptionsType, o.builtinOptions = otype, opts
        if custom_opts is not None:
            o.customOptions = list(custom_opts)
            o.customOptionsFormat = self.fb.CustomOptionsFormat.FLEXBUFFERS
        self.sg.operators.append(o)


def _conv(g: _Graph, o: dict, nm: str) -> None:
    fb = g.fb
    w, depthwise = o["W"], o["groups"] > 1
    if depthwise:
        wt = g.tensor(nm + "/W", [1, o["k"], o["k"], w.shape[0]], data=w.transpose(1, 2, 3, 0))
        opts = fb.DepthwiseConv2DOptionsT()
        opts.depthMultiplier = 1
    else:
        wt = g.tensor(nm + "/W", [w.shape[0], o["k"], o["k"], w.shape[1]], data=w.transpose(0, 2, 3, 1))
        opts = fb.Conv2DOptionsT()
    opts.padding = fb.Padding.SAME
    opts.strideW = opts.strideH = o["s"]
    opts.dilationWFactor = opts.dilationHFactor = 1
    opts.fusedActivationFunction = g.act_fn[o["act"]]
    bt = g.tensor(nm + "/B", [w.shape[0]], data=o["B"])
    BO, BI = fb.BuiltinOptions, fb.BuiltinOperator
    g.op(
        BI.DEPTHWISE_CONV_2D if depthwise else BI.CONV_2D,
        [g.index[o["x"]], wt, bt],
        [g.activation(o["y"])],
        BO.DepthwiseConv2DOptions if depthwise else BO.Conv2DOptions,
        opts,
    )


def _add(g: _Graph, o: dict, nm: str) -> None:
    fb = g.fb
    opts = fb.AddOptionsT()
    opts.fusedActivationFunction = g.act_fn[o["act"]]
    ins = [g.index[o["a"]], g.index[o["b"]]]
    g.op(fb.BuiltinOperator.ADD, ins, [g.activation(o["y"])], fb.BuiltinOptions.AddOptions, opts)


def _maxpool(g: _Graph, o: dict, nm: str) -> None:
    fb = g.fb
    opts = fb.Pool2DOptionsT()
    opts.padding, opts.strideW, opts.strideH = fb.Padding.SAME, o["s"], o["s"]
    opts.filterWidth = opts.filterHeight = o["k"]
    out = [g.activation(o["y"])]
    g.op(fb.BuiltinOperator.MAX_POOL_2D, [g.index[o["x"]]], out, fb.BuiltinOptions.Pool2DOptions, opts)


def _gap_fc(g: _Graph, o: dict, nm: str) -> None:
    """Global average pooling (MEAN over H and W), the classifier, and its softmax where the net has one."""
    fb = g.fb
    BO, BI = fb.BuiltinOptions, fb.BuiltinOperator
    c = g.net.shapes[o["x"]][0]
    axes = g.tensor(nm + "/axes", [2], fb.TensorType.INT32, np.array([1, 2], np.int32))
    gap = g.tensor(nm + "/gap", [1, c])
    ro = fb.ReducerOptionsT()
    ro.keepDims = False
    g.op(BI.MEAN, [g.index[o["x"]], axes], [gap], BO.ReducerOptions, ro)
    wt = g.tensor(nm + "/W", list(o["W"].shape), data=o["W"])
    bt = g.tensor(nm + "/B", list(o["B"].shape), data=o["B"])
    n = o["W"].shape[0]
    logits = g.tensor(nm + "/logits", [1, n]) if o["softmax"] else g.activation(o["y"])
    g.op(BI.FULLY_CONNECTED, [gap, wt, bt], [logits], BO.FullyConnectedOptions, fb.FullyConnectedOptionsT())
    if o["softmax"]:
        so = fb.SoftmaxOptionsT()
        so.beta = 1.0
        g.op(BI.SOFTMAX, [logits], [g.activation(o["y"])], BO.SoftmaxOptions, so)


def _flat(g: _Graph, o: dict, nm: str) -> None:
    fb = g.fb
    shape = [1, *g.net.shapes[o["y"]]]
    st = g.tensor(nm + "/shape", [3], fb.TensorType.INT32, np.array(shape, np.int32))
    ro = fb.ReshapeOptionsT()
    ro.newShape = shape
    out = [g.activation(o["y"])]
    g.op(fb.BuiltinOperator.RESHAPE, [g.index[o["x"]], st], out, fb.BuiltinOptions.ReshapeOptions, ro)


def _concat(g: _Graph, o: dict, nm: str) -> None:
    fb = g.fb
    BO, BI = fb.BuiltinOptions, fb.BuiltinOperator
    co = fb.ConcatenationOptionsT()
    co.axis = 1
    ins = [g.index[x] for x in o["xs"]]
    if o["sigmoid"]:
        cat = g.tensor(nm + "/cat", g.nhwc(o["y"]))
        g.op(BI.CONCATENATION, ins, [cat], BO.ConcatenationOptions, co)
        g.op(BI.LOGISTIC, [cat], [g.activation(o["y"])])
    else:
        g.op(BI.CONCATENATION, ins, [g.activation(o["y"])], BO.ConcatenationOptions, co)


_EMITTERS = {
    "conv": _conv,
    "add": _add,
    "maxpool": _maxpool,
    "gap_fc": _gap_fc,
    "flat": _flat,
    "concat": _concat,
}


def _ssd_postprocess(g: _Graph, outs: list[int]) -> list[int]:
    """The TFLite_Detection_PostProcess custom op over the box and class outputs and the anchors; its four
    detection tensors are the graph's outputs."""
    from flatbuffers import flexbuffers

    assert g.net.anchors is not None
    at = g.tensor("anchors", list(g.net.anchors.shape), data=g.net.anchors)
    n = SSD_POSTPROCESS["max_detections"]
    det = [
        g.tensor("detection_boxes", [1, n, 4]),
        g.tensor("detection_classes", [1, n]),
        g.tensor("detection_scores", [1, n]),
        g.tensor("num_detections", [1]),
    ]
    options = dict(SSD_POSTPROCESS, num_classes=g.net.num_classes - 1)  # without the background class
    g.op(
        g.fb.BuiltinOperator.CUSTOM,
        [outs[0], outs[1], at],
        det,
        custom="TFLite_Detection_PostProcess",
        custom_opts=flexbuffers.Dumps(options),
    )
    return det


def tflite_stats(data: bytes) -> dict:
    """MACs and parameters read back from a flatbuffer (float or int8): every CONV_2D, DEPTHWISE_CONV_2D
    and FULLY_CONNECTED, from tensor shapes only (no buffer is decoded); plus inputs and outputs."""
    fb = _schema()
    m = fb.Model.GetRootAs(data, 0)
    sg = m.Subgraphs(0)
    BI = fb.BuiltinOperator

    def shape(i: int) -> list[int]:
        return [int(v) for v in sg.Tensors(i).ShapeAsNumpy()] if sg.Tensors(i).ShapeLength() else []

    macs = params = 0
    for k in range(sg.OperatorsLength()):
        o = sg.Operators(k)
        oc = m.OperatorCodes(o.OpcodeIndex())
        builtin = max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
        ins = [int(v) for v in o.InputsAsNumpy()]
        if builtin not in (BI.CONV_2D, BI.DEPTHWISE_CONV_2D, BI.FULLY_CONNECTED):
            continue
        w = shape(ins[1])
        bias = int(np.prod(shape(ins[2]))) if len(ins) > 2 and ins[2] >= 0 else 0
        params += int(np.prod(w)) + bias
        y = shape(int(o.OutputsAsNumpy()[0]))
        if builtin == BI.CONV_2D:
            macs += int(np.prod(y[1:])) * int(np.prod(w[1:]))
        elif builtin == BI.DEPTHWISE_CONV_2D:
            macs += int(np.prod(y[1:3])) * int(np.prod(w[1:]))
        else:
            macs += int(np.prod(y[:-1])) * int(np.prod(w))

    def io(indices) -> list[dict]:
        out = []
        for i in indices:
            t = sg.Tensors(int(i))
            out.append(
                {
                    "name": t.Name().decode(),
                    "shape": shape(int(i)),
                    "dtype": _DTYPES.get(t.Type(), str(t.Type())),
                }
            )
        return out

    return {
        "macs": macs,
        "params": params,
        "inputs": io(sg.InputsAsNumpy()),
        "outputs": io(sg.OutputsAsNumpy()),
    }
