import { importedAddress, type PeerMapping } from "./addresses.js";

/**
 * How this cluster reaches each peer's pods, as the network controller last set it up: the seam
 * for the multi-cluster services, whose EndpointSlices for an imported service must carry the
 * address this cluster dials (a peer's pod IP translated into the range chosen for that peer).
 */
export class PeerAddresses {
  private mappings: readonly PeerMapping[] = [];

  update(mappings: readonly PeerMapping[]): void {
    this.mappings = [...mappings];
  }

  /** The address to dial for `podIP` of cluster `sourceCluster` (its cluster id); undefined when not reachable. */
  importedAddress(sourceCluster: string, podIP: string): string | undefined {
    return importedAddress(this.mappings, sourceCluster, podIP);
  }

  list(): readonly PeerMapping[] {
    return this.mappings;
  }
}
