/**
 * The work of this process's controllers as metrics, like controller-runtime's
 * `controller_runtime_reconcile_total` and `workqueue_depth`: whether the controllers keep up, and
 * how many reconciles a change costs. Read from the running controllers at each scrape.
 */
import { Counter, Gauge, type Registry } from "prom-client";
import { type ControllerStats, runningControllers } from "./controller.js";
import { runningWatches } from "./informer.js";

/** Sums of one statistic per controller name (controllers of one name in one process are one). */
function byName(stat: (stats: ControllerStats) => number): Map<string, number> {
  const sums = new Map<string, number>();
  for (const controller of runningControllers())
    sums.set(controller.name, (sums.get(controller.name) ?? 0) + stat(controller.stats()));
  return sums;
}

/** Registers the controllers' metrics in `registry` (once per registry). */
export function registerControllerMetrics(registry: Registry): void {
  if (registry.getSingleMetric("tenantry_controller_reconciles_total")) return;
  const registers = [registry];
  const counter = (name: string, help: string, stat: (stats: ControllerStats) => number) =>
    new Counter({
      name,
      help,
      labelNames: ["controller"],
      registers,
      collect() {
        this.reset();
        for (const [controller, value] of byName(stat)) this.inc({ controller }, value);
      },
    });
  counter(
    "tenantry_controller_reconciles_total",
    "Reconciles since the controller started (this replica leads).",
    (s) => s.reconcilesTotal,
  );
  counter(
    "tenantry_controller_reconcile_errors_total",
    "Reconciles that failed and were retried with backoff.",
    (s) => s.reconcileErrorsTotal,
  );
  new Gauge({
    name: "tenantry_workqueue_depth",
    help: "Keys waiting for a worker, by priority (high: new and changed objects; low: lists and status-only changes).",
    labelNames: ["controller", "priority"],
    registers,
    collect() {
      this.reset();
      const low = byName((s) => s.lowPriorityDepth);
      for (const [controller, depth] of byName((s) => s.queueDepth)) {
        this.set({ controller, priority: "high" }, depth - (low.get(controller) ?? 0));
        this.set({ controller, priority: "low" }, low.get(controller) ?? 0);
      }
    },
  });
  new Gauge({
    name: "tenantry_workqueue_in_flight",
    help: "Keys being reconciled.",
    labelNames: ["controller"],
    registers,
    collect() {
      this.reset();
      for (const [controller, value] of byName((s) => s.inFlight)) this.set({ controller }, value);
    },
  });
  new Gauge({
    name: "tenantry_informer_watches",
    help: "Informers running, by cluster and resource: each resource is meant to be watched (and cached) once per cluster.",
    labelNames: ["cluster", "resource"],
    registers,
    collect() {
      this.reset();
      for (const { cluster, resource } of runningWatches()) this.inc({ cluster, resource });
    },
  });
}
