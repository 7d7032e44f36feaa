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
    import flatbuffers

    fb = _schema()
    model = fb.ModelT()
    model.version = 3
    model.description = f"boardlab generated {net.name}: architecture-faithful, seeded random weights"
    model.buffers = [fb.BufferT()]  # buffer 0: the empty sentinel
    model.operatorCodes = []
    sg = fb.SubGraphT()
    sg.tensors, sg.operators, sg.name = [], [], "main"
    index: dict[str, int] = {}
    codes: dict[tuple, int] = {}

    def tensor(name: str, shape, ttype=fb.TensorType.FLOAT32, data: np.ndarray | None = None) -> int:
        t = fb.TensorT()
        t.name, t.shape, t.type, t.buffer = name, list(shape), ttype, 0
        if data is not None:
            b = fb.BufferT()
            b.data = np.frombuffer(np.ascontiguousarray(data).tobytes(), np.uint8)
            model.buffers.append(b)
            t.buffer = len(model.buffers) - 1
        sg.tensors.append(t)
        index[name] = len(sg.tensors) - 1
        return index[name]

    def nhwc(t: str) -> list[int]:
        s = net.shapes[t]
        return [1, s[1], s[2], s[0]] if len(s) == 3 else [1, *s]

    def activation_tensor(t: str) -> int:
        return index[t] if t in index else tensor(t, nhwc(t))

    def code(builtin: int, custom: str | None = None) -> int:
        key = (builtin, custom)
        if key not in codes:
            oc = fb.OperatorCodeT()
            oc.builtinCode, oc.deprecatedBuiltinCode, oc.version = builtin, min(builtin, 127), 1
            if custom:
                oc.customCode = custom
            model.operatorCodes.append(oc)
            codes[key] = len(model.operatorCodes) - 1
        return codes[key]

    def op(builtin, ins, outs, otype=0, opts=None, custom=None, custom_opts=None) -> None:
        o = fb.OperatorT()
        o.opcodeIndex = code(builtin, custom)
        o.inputs, o.outputs = list(ins), list(outs)
        o.builtinOptionsType, o.builtinOptions = otype, opts
        if custom_opts is not None:
            o.customOptions = list(custom_opts)
            o.customOptionsFormat = fb.CustomOptionsFormat.FLEXBUFFERS
        sg.operators.append(o)

    act_fn = {
        None: fb.ActivationFunctionType.NONE,
        "relu": fb.ActivationFunctionType.RELU,
        "relu6": fb.ActivationFunctionType.RELU6,
    }
    BO, BI = fb.BuiltinOptions, fb.BuiltinOperator
    tensor("input", nhwc("input"))
    for i, o in enumerate(net.ops):
        nm = f"{o['op']}_{i}"
        if o["op"] == "conv":
            w, depthwise = o["W"], o["groups"] > 1
            if depthwise:
                wt = tensor(nm + "/W", [1, o["k"], o["k"], w.shape[0]], data=w.transpose(1, 2, 3, 0))
                opts = fb.DepthwiseConv2DOptionsT()
                opts.depthMultiplier = 1
            else:
                wt = tensor(nm + "/W", [w.shape[0], o["k"], o["k"], w.shape[1]], data=w.transpose(0, 2, 3, 1))
                opts = fb.Conv2DOptionsT()
            opts.padding = fb.Padding.SAME
            opts.strideW = opts.strideH = o["s"]
            opts.dilationWFactor = opts.dilationHFactor = 1
            opts.fusedActivationFunction = act_fn[o["act"]]
            bt = tensor(nm + "/B", [w.shape[0]], data=o["B"])
            op(
                BI.DEPTHWISE_CONV_2D if depthwise else BI.CONV_2D,
                [index[o["x"]], wt, bt],
                [activation_tensor(o["y"])],
                BO.DepthwiseConv2DOptions if depthwise else BO.Conv2DOptions,
                opts,
            )
        elif o["op"] == "add":
            opts = fb.AddOptionsT()
            opts.fusedActivationFunction = act_fn[o["act"]]
            op(BI.ADD, [index[o["a"]], index[o["b"]]], [activation_tensor(o["y"])], BO.AddOptions, opts)
        elif o["op"] == "maxpool":
            opts = fb.Pool2DOptionsT()
            opts.padding, opts.strideW, opts.strideH = fb.Padding.SAME, o["s"], o["s"]
            opts.filterWidth = opts.filterHeight = o["k"]
            op(BI.MAX_POOL_2D, [index[o["x"]]], [activation_tensor(o["y"])], BO.Pool2DOptions, opts)
        elif o["op"] == "gap_fc":
            c = net.shapes[o["x"]][0]
            axes = tensor(nm + "/axes", [2], fb.TensorType.INT32, np.array([1, 2], np.int32))
            gap = tensor(nm + "/gap", [1, c])
            ro = fb.ReducerOptionsT()
            ro.keepDims = False
            op(BI.MEAN, [index[o["x"]], axes], [gap], BO.ReducerOptions, ro)
            wt = tensor(nm + "/W", list(o["W"].shape), data=o["W"])
            bt = tensor(nm + "/B", list(o["B"].shape), data=o["B"])
            n = o["W"].shape[0]
            logits = tensor(nm + "/logits", [1, n]) if o["softmax"] else activation_tensor(o["y"])
            op(
                BI.FULLY_CONNECTED,
                [gap, wt, bt],
                [logits],
                BO.FullyConnectedOptions,
                fb.FullyConnectedOptionsT(),
            )
            if o["softmax"]:
                so = fb.SoftmaxOptionsT()
                so.beta = 1.0
                op(BI.SOFTMAX, [logits], [activation_tensor(o["y"])], BO.SoftmaxOptions, so)
        elif o["op"] == "flat":
            shape = [1, *net.shapes[o["y"]]]
            st = tensor(nm + "/shape", [3], fb.TensorType.INT32, np.array(shape, np.int32))
            ro = fb.ReshapeOptionsT()
            ro.newShape = shape
            op(BI.RESHAPE, [index[o["x"]], st], [activation_tensor(o["y"])], BO.ReshapeOptions, ro)
        elif o["op"] == "concat":
            co = fb.ConcatenationOptionsT()
            co.axis = 1
            if o["sigmoid"]:
                cat = tensor(nm + "/cat", nhwc(o["y"]))
                op(BI.CONCATENATION, [index[x] for x in o["xs"]], [cat], BO.ConcatenationOptions, co)
                op(BI.LOGISTIC, [cat], [activation_tensor(o["y"])])
            else:
                op(
                    BI.CONCATENATION,
                    [index[x] for x in o["xs"]],
                    [activation_tensor(o["y"])],
                    BO.ConcatenationOptions,
                    co,
                )
    outs = [index[t] for t in net.outputs]
    if net.anchors is not None:
        from flatbuffers import flexbuffers

        at = tensor("anchors", list(net.anchors.shape), data=net.anchors)
        n = SSD_POSTPROCESS["max_detections"]
        det = [
            tensor("detection_boxes", [1, n, 4]),
            tensor("detection_classes", [1, n]),
            tensor("detection_scores", [1, n]),
            tensor("num_detections", [1]),
        ]
        options = dict(SSD_POSTPROCESS, num_classes=net.num_classes - 1)  # without the background class
        op(
            BI.CUSTOM,
            [outs[0], outs[1], at],
            det,
            custom="TFLite_Detection_PostProcess",
            custom_opts=flexbuffers.Dumps(options),
        )
        outs = det
    sg.inputs, sg.outputs = [index["input"]], outs
    model.subgraphs = [sg]
    weight_bytes = sum(len(b.data) for b in model.buffers if b.data is not None)
    builder = flatbuffers.Builder(weight_bytes + (1 << 20))  # one allocation instead of ~17 doublings
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return builder.Output()


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
