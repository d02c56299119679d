/**
 * Informers that come and go with what they follow (one per virtual node, one per remote
 * namespace), each reporting every change of its objects to one callback.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Informer } from "../../kube/index.js";

interface PoolEntry<T extends KubernetesObject> {
  informer: Informer<T>;
  /** What the informer was made from (e.g. the peer client): a different one replaces it. */
  source: unknown;
  unsubscribe: () => void;
}

export class InformerPool<T extends KubernetesObject> {
  private readonly entries = new Map<string, PoolEntry<T>>();

  constructor(private readonly onChange: (obj: T) => void) {}

  /** Starts the informer for `key` unless one made from `source` runs already; true when started. */
  ensure(key: string, source: unknown, create: () => Informer<T>): boolean {
    const existing = this.entries.get(key);
    if (existing?.source === source) return false;
    if (existing) void this.remove(key);
    const informer = create();
    const unsubscribe = informer.addHandler({
      onAdd: this.onChange,
      onUpdate: (_old, obj) => this.onChange(obj),
      onDelete: this.onChange,
    });
    this.entries.set(key, { informer, source, unsubscribe });
    informer.start();
    return true;
  }

  get(key: string): Informer<T> | undefined {
    return this.entries.get(key)?.informer;
  }

  keys(): string[] {
    return [...this.entries.keys()];
  }

  informers(): Informer<T>[] {
    return [...this.entries.values()].map((e) => e.informer);
  }

  /** Stops the informer for `key`; its objects are reported once more, as deleted. */
  async remove(key: string): Promise<void> {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    entry.unsubscribe();
    await entry.informer.stop();
    for (const obj of entry.informer.list()) this.onChange(obj);
  }

  async clear(): Promise<void> {
    await Promise.all(this.keys().map((key) => this.remove(key)));
  }
}
