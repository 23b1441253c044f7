"""home_eval node: runs the PersonalHomeBench evaluation (``personal.smarthome.evaluate``)
with its parameters, writes report.md + plots, publishes the summary on ``home_eval/summary``
(personal/msg/HomeEvalSummary, transient local) and exits (the graph marks it required).
"""
from __future__ import annotations

import json
import threading

import rclpy
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from personal import exit_codes
from personal.runs.output import OutputDirError
from personal.msg import HomeEvalSummary
from personal.smarthome.evaluate import FAMILIES, EvalConfig, run_home_eval

LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)


class HomeEvalNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("home_eval", **kwargs)
        d = self.declare_parameter
        max_items = int(d("max_items", -1).value)
        families = tuple(f.strip() for f in d("families", ",".join(FAMILIES)).value.split(",") if f.strip())
        bad = [f for f in families if f not in FAMILIES]
        if bad:
            raise ValueError(f"parameter families: unknown {bad} (known: {list(FAMILIES)})")
        self.cfg = EvalConfig(out_dir=d("out_dir", "runs/home_eval").value, households=int(d("households", 20).value),
                              seed=int(d("seed", 0).value), agent=d("agent", "reference").value,
                              endpoint=d("endpoint", "").value, model=d("model", "").value, judge=bool(d("judge", False).value),
                              max_items=None if max_items < 0 else max_items, families=families,
                              video_tools=bool(d("video_tools", True).value), first=int(d("first_household", 0).value))
        self.pub = self.create_publisher(HomeEvalSummary, "home_eval/summary", LATCHED)
        self.done = threading.Event()
        self.code = exit_codes.FAILED
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        self.get_logger().info(f"home_eval: {self.cfg.households} households, agent {self.cfg.agent} -> {self.cfg.out_dir}")
        try:
            s = run_home_eval(self.cfg, progress=lambda m: self.get_logger().info(m))
            keys = ("IG_accuracy", "MC_accuracy", "CF_macro", "FR_MAP@1", "FR_RRS", "PG_validity")
            metrics = {k: float(v) for k, v in s.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            self.pub.publish(HomeEvalSummary(
                agent=str(self.cfg.agent), households=int(self.cfg.households),
                report_path=f"{self.cfg.out_dir}/report.md", metric_names=list(metrics),
                metric_values=list(metrics.values()), summary_json=json.dumps(s, default=str)))
            self.get_logger().info("summary: " + ", ".join(f"{k}={s[k]:.3f}" for k in keys if k in s)
                                   + f"; report {self.cfg.out_dir}/report.md")
            self.code = exit_codes.OK
        except OutputDirError as exc:  # unwritable, or another run holds it: the table's code, as every evaluator
            self.get_logger().error(f"cannot write the results: {exc}")
            self.code = exit_codes.BAD_INPUT
        except Exception as exc:  # report and exit non-zero instead of hanging the graph
            self.get_logger().error(f"home_eval failed: {type(exc).__name__}: {exc}")
        finally:
            self.done.set()


def main(args=None) -> None:
    rclpy.init(args=args)
    node = HomeEvalNode()
    try:
        while rclpy.ok() and not node.done.is_set():
            rclpy.spin_once(node, timeout_sec=0.2)
        rclpy.spin_once(node, timeout_sec=0.5)  # let the latched summary go out
    except KeyboardInterrupt:
        pass
    finally:
        code = node.code
        node.destroy_node()
        rclpy.try_shutdown()
    raise SystemExit(code)


if __name__ == "__main__":
    main()
