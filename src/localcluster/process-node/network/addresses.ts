import { Cidr } from "./cidr.js";

/**
 * Picks pod addresses from the node's podCIDR round-robin, never one in use, never the network
 * address, the bridge's (the first) or the broadcast address: a deleted pod's address comes back
 * last, so a client still holding it (a proxy route not yet removed) does not reach the next pod at
 * once.
 */
export class PodAddresses {
  private readonly cidr: Cidr;
  private next: number;
  private readonly used = new Set<string>();

  constructor(podCidr: string, start = 0) {
    this.cidr = Cidr.parse(podCidr);
    this.next = start % this.capacity;
  }

  /** How many pod addresses the node has. */
  get capacity(): number {
    return this.cidr.size - 3;
  }

  contains(ip: string): boolean {
    const n = this.cidr.indexOf(ip);
    return n >= 2 && n < this.cidr.size - 1;
  }

  /** Marks an address as taken (a pod found running after a restart). */
  reserve(ip: string): void {
    if (this.contains(ip)) this.used.add(ip);
  }

  release(ip: string): void {
    this.used.delete(ip);
  }

  allocate(): string {
    for (let tried = 0; tried < this.capacity; tried++) {
      const ip = this.cidr.at(this.next + 2);
      this.next = (this.next + 1) % this.capacity;
      if (!this.used.has(ip)) {
        this.used.add(ip);
        return ip;
      }
    }
    throw new Error(`every address of ${this.cidr} is in use`);
  }

  /** Where the next allocation starts, kept across restarts. */
  cursor(): number {
    return this.next;
  }
}
