"""ONNX emitter (opset 13, IR 8: loadable by the onnxruntime 1.15 of TI's SDK) and graph statistics.

SSD graphs carry the post-processing of a TF object-detection export in plain ONNX ops: box decoding
against the 1917 anchors, the best class per anchor, class-agnostic NonMaxSuppression, and four outputs
shaped like TFLite_Detection_PostProcess's (boxes, classes, scores, count), so both runtimes do the same
work per frame.
"""

from __future__ import annotations

import numpy as np

from boardlab.ai.nets import SSD_POSTPROCESS, Net

OPSET = 13
IR_VERSION = 8


def to_onnx(net: Net):
    """The network as an ONNX model: one node (and its activation) per op of `net.ops` (the emitters
    below), then the SSD post-processing where the net has anchors; checked by onnx's checker."""
    import onnx
    from onnx import TensorProto, helper

    g = _Nodes()
    if any(o.get("act") == "relu6" for o in net.ops):
        g.const("relu6_min", np.array(0, np.float32))
        g.const("relu6_max", np.array(6, np.float32))
    for i, o in enumerate(net.ops):
        _EMITTERS[o["op"]](g, o, f"{o['op']}_{i}")

    def value_info(name: str, shape, elem=TensorProto.FLOAT):
        return helper.make_tensor_value_info(name, elem, list(shape))

    inputs = [value_info("input", [1, *net.shapes["input"]])]
    if net.anchors is None:
        outputs = [value_info(t, [1, *net.shapes[t]]) for t in net.outputs]
    else:
        outputs = _ssd_postprocess(net, g.nodes, g.const, helper)
    graph = helper.make_graph(g.nodes, net.name, inputs, outputs, g.inits)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="boardlab", producer_version="1"
    )
    model.ir_version = IR_VERSION  # helper stamps the newest IR; older onnxruntime builds need <= 8
    model.doc_string = f"boardlab generated {net.name}: architecture-faithful, seeded random weights"
    onnx.checker.check_model(skeleton(model))
    return model


class _Nodes:
    """The graph's nodes and initializers as the emitters add them."""

    def __init__(self) -> None:
        self.nodes: list = []
        self.inits: list = []

    def const(self, name: str, arr: np.ndarray) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(self, *args, **kwargs) -> None:
        from onnx import helper

        self.nodes.append(helper.make_node(*args, **kwargs))

    def activation(self, y: str, act: str | None, name: str) -> None:
        """The op's activation as a node of its own after the last one, which then writes `y`_pre."""
        if act is None:
            return
        pre = y + "_pre"
        self.nodes[-1].output[0] = pre
        if act == "relu":
            self.node("Relu", [pre], [y], name=name + "_relu")
        else:
            self.node("Clip", [pre, "relu6_min", "relu6_max"], [y], name=name + "_relu6")


def _conv(g: _Nodes, o: dict, nm: str) -> None:
    w, b = g.const(nm + "_W", o["W"]), g.const(nm + "_B", o["B"])
    top, left, bottom, right = o["pads"]
    g.node("Conv", [o["x"], w, b], [o["y"]], name=nm, kernel_shape=[o["k"]] * 2, strides=[o["s"]] * 2,
           pads=[top, left, bottom, right], group=o["groups"])  # fmt: skip
    g.activation(o["y"], o["act"], nm)


def _add(g: _Nodes, o: dict, nm: str) -> None:
    g.node("Add", [o["a"], o["b"]], [o["y"]], name=nm)
    g.activation(o["y"], o["act"], nm)


def _maxpool(g: _Nodes, o: dict, nm: str) -> None:
    top, left, bottom, right = o["pads"]
    g.node("MaxPool", [o["x"]], [o["y"]], name=nm, kernel_shape=[o["k"]] * 2, strides=[o["s"]] * 2,
           pads=[top, left, bottom, right])  # fmt: skip


def _gap_fc(g: _Nodes, o: dict, nm: str) -> None:
    g.node("GlobalAveragePool", [o["x"]], [nm + "_gap"], name=nm + "_gap")
    g.node("Flatten", [nm + "_gap"], [nm + "_flat"], name=nm + "_flat")
    w, b = g.const(nm + "_W", o["W"]), g.const(nm + "_B", o["B"])
    out = nm + "_logits" if o["softmax"] else o["y"]
    g.node("Gemm", [nm + "_flat", w, b], [out], name=nm, transB=1)
    if o["softmax"]:
        g.node("Softmax", [out], [o["y"]], name=nm + "_softmax", axis=-1)


def _flat(g: _Nodes, o: dict, nm: str) -> None:
    shape = g.const(nm + "_shape", np.array([1, -1, o["last"]], np.int64))
    g.node("Transpose", [o["x"]], [nm + "_nhwc"], name=nm + "_nhwc", perm=[0, 2, 3, 1])
    g.node("Reshape", [nm + "_nhwc", shape], [o["y"]], name=nm)


def _concat(g: _Nodes, o: dict, nm: str) -> None:
    out = nm + "_cat" if o["sigmoid"] else o["y"]
    g.node("Concat", o["xs"], [out], name=nm, axis=1)
    if o["sigmoid"]:
        g.node("Sigmoid", [out], [o["y"]], name=nm + "_sigmoid")


_EMITTERS = {
    "conv": _conv,
    "add": _add,
    "maxpool": _maxpool,
    "gap_fc": _gap_fc,
    "flat": _flat,
    "concat": _concat,
}


def skeleton(model):
    """The graph without its weight data: initializers above 1 KiB become typed inputs of the same shape.
    Checking and shape inference on it take milliseconds instead of re-serializing 100 MB of weights."""
    from onnx import helper

    g = model.graph
    small: list = []
    big: list = []
    for init in g.initializer:
        (small if init.ByteSize() <= 1024 else big).append(init)
    inputs = list(g.input) + [helper.make_tensor_value_info(i.name, i.data_type, list(i.dims)) for i in big]
    graph = helper.make_graph(
        list(g.node), g.name, inputs, list(g.output), small, value_info=list(g.value_info)
    )
    light = helper.make_model(
        graph, opset_imports=list(model.opset_import), producer_name=model.producer_name
    )
    light.ir_version = model.ir_version
    return light


def _ssd_postprocess(net: Net, nodes: list, const, helper) -> list:
    """Decode, best class per anchor, NMS; outputs like TFLite_Detection_PostProcess."""
    from onnx import TensorProto

    pp = SSD_POSTPROCESS
    raw_boxes, scores = net.outputs
    a = net.anchors
    assert a is not None  # called only for a net with anchors
    yx, hw = a[None, :, :2], a[None, :, 2:]
    scale_yx = np.array([1 / pp["y_scale"], 1 / pp["x_scale"]], np.float32)
    scale_hw = np.array([1 / pp["h_scale"], 1 / pp["w_scale"]], np.float32)
    c = {
        "anchor_yx": yx.astype(np.float32),
        "anchor_hw": hw.astype(np.float32),
        "anchor_hw_scaled": (hw * scale_yx).astype(np.float32),
        "box_scale_hw": scale_hw,
        "half": np.array(0.5, np.float32),
        "s0": np.array([0], np.int64),
        "s1": np.array([1], np.int64),
        "s2": np.array([2], np.int64),
        "s4": np.array([4], np.int64),
        "s_cls_end": np.array([net.num_classes], np.int64),
        "one_axis": np.array([1], np.int64),
        "index_col": np.array(2, np.int64),
        "nms_max": np.array([pp["max_detections"]], np.int64),
        "nms_iou": np.array([pp["nms_iou_threshold"]], np.float32),
        "nms_score": np.array([pp["nms_score_threshold"]], np.float32),
    }
    for name, arr in c.items():
        const("post_" + name, arr)

    graph_tensors = {raw_boxes, scores}

    def node(op, ins, outs, **kw):
        ins = [i if i in graph_tensors else "post_" + i for i in ins]
        nodes.append(helper.make_node(op, ins, ["post_" + o for o in outs], name="post_" + outs[0], **kw))

    node("Slice", [raw_boxes, "s0", "s2", "s2"], ["enc_yx"])
    node("Slice", [raw_boxes, "s2", "s4", "s2"], ["enc_hw"])
    node("Mul", ["enc_yx", "anchor_hw_scaled"], ["d_yx"])
    node("Add", ["d_yx", "anchor_yx"], ["center"])
    node("Mul", ["enc_hw", "box_scale_hw"], ["e_hw"])
    node("Exp", ["e_hw"], ["exp_hw"])
    node("Mul", ["exp_hw", "anchor_hw"], ["size"])
    node("Mul", ["size", "half"], ["half_size"])
    node("Sub", ["center", "half_size"], ["mins"])
    node("Add", ["center", "half_size"], ["maxs"])
    node("Concat", ["mins", "maxs"], ["boxes"], axis=2)  # [1, n, 4] ymin, xmin, ymax, xmax
    node("Slice", [scores, "s1", "s_cls_end", "s2"], ["class_scores"])  # without the background class
    node("ReduceMax", ["class_scores"], ["best_score"], axes=[2], keepdims=0)  # [1, n]
    node("ArgMax", ["class_scores"], ["best_class"], axis=2, keepdims=0)
    node("Unsqueeze", ["best_score", "one_axis"], ["nms_scores"])  # [1, 1, n]: one class, agnostic
    node("NonMaxSuppression", ["boxes", "nms_scores", "nms_max", "nms_iou", "nms_score"], ["selected"])
    node("Gather", ["selected", "index_col"], ["keep"], axis=1)  # [k] anchor indices, best first
    node("Gather", ["boxes", "keep"], ["det_boxes"], axis=1)
    node("Gather", ["best_score", "keep"], ["det_scores"], axis=1)
    node("Gather", ["best_class", "keep"], ["det_classes_i"], axis=1)
    node("Cast", ["det_classes_i"], ["det_classes"], to=TensorProto.FLOAT)
    node("Shape", ["keep"], ["num_i"])
    node("Cast", ["num_i"], ["num_detections"], to=TensorProto.FLOAT)
    # rename the graph outputs to the names a TF detection export uses
    for src, dst in [
        ("det_boxes", "detection_boxes"),
        ("det_classes", "detection_classes"),
        ("det_scores", "detection_scores"),
    ]:
        nodes.append(helper.make_node("Identity", ["post_" + src], [dst], name="post_out_" + dst))
    nodes.append(
        helper.make_node("Identity", ["post_num_detections"], ["num_detections"], name="post_out_num")
    )
    f = TensorProto.FLOAT
    return [
        helper.make_tensor_value_info("detection_boxes", f, [1, "detections", 4]),
        helper.make_tensor_value_info("detection_classes", f, [1, "detections"]),
        helper.make_tensor_value_info("detection_scores", f, [1, "detections"]),
        helper.make_tensor_value_info("num_detections", f, [1]),
    ]


def onnx_stats(model) -> dict:
    """MACs and parameters read back from a graph (float or QDQ int8): every Conv and Gemm, with the
    shapes onnx's shape inference gives; plus the graph's inputs and outputs."""
    import onnx

    g = onnx.shape_inference.infer_shapes(skeleton(model)).graph
    weights = {i.name for i in model.graph.initializer}
    shapes: dict[str, list] = {}
    for init in g.initializer:
        shapes[init.name] = list(init.dims)
    for vi in list(g.value_info) + list(g.input) + list(g.output):
        dims = vi.type.tensor_type.shape.dim
        shapes[vi.name] = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in dims]
    macs = params = 0
    for n in g.node:
        if n.op_type == "Conv":
            w, y = shapes[n.input[1]], shapes[n.output[0]]
            macs += int(np.prod(y[1:])) * int(np.prod(w[1:]))
            params += int(np.prod(w)) + (int(np.prod(shapes[n.input[2]])) if len(n.input) > 2 else 0)
        elif n.op_type == "Gemm":
            w = shapes[n.input[1]]
            rows = shapes[n.input[0]][0]
            macs += rows * int(np.prod(w))
            params += int(np.prod(w)) + (int(np.prod(shapes[n.input[2]])) if len(n.input) > 2 else 0)

    def io(vis) -> list[dict]:
        out = []
        for vi in vis:
            t = vi.type.tensor_type
            dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in t.shape.dim]
            out.append(
                {
                    "name": vi.name,
                    "shape": dims,
                    "dtype": onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).name,
                }
            )
        return out

    real_inputs = [vi for vi in g.input if vi.name not in weights]
    return {"macs": macs, "params": params, "inputs": io(real_inputs), "outputs": io(g.output)}
