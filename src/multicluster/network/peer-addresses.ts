import { remapAddress } from "./addresses.js";

/** A cluster as the peerings name it: its name (a Peering's, or a consumer's cluster name) and id. */
export interface ClusterRef {
  name: string;
  id: string;
}

/**
 * How one cluster dials another's pods through their gateways: `source`'s pod range and the
 * range `importer` sees it in. A peering gives two, one each way (the exchange ConfigMap holds
 * both sides' ranges).
 */
export interface PeerLink {
  source: ClusterRef;
  importer: ClusterRef;
  podCidr: string;
  remappedCidr: string;
}

const named = (ref: ClusterRef, cluster: string) => ref.name === cluster || ref.id === cluster;
const linkKey = (link: PeerLink) => `${link.source.id}>${link.importer.id}`;

/**
 * How clusters joined by gateways reach each other's pods, as the network controller last set
 * them up: the seam for the multi-cluster services, whose EndpointSlices for an imported service
 * must carry the address the importing cluster dials (the source's pod IP translated into the
 * range the importer chose for the source).
 */
export class PeerAddresses {
  private own?: ClusterRef;
  private links: readonly PeerLink[] = [];
  private readonly listeners = new Set<() => void>();

  /** Replaces the links (this cluster's to and from each peer); listeners hear of a change only. */
  update(own: ClusterRef, links: readonly PeerLink[]): void {
    const unique = [...new Map(links.map((l) => [linkKey(l), l])).values()].sort((a, b) =>
      linkKey(a).localeCompare(linkKey(b)),
    );
    if (JSON.stringify([own, unique]) === JSON.stringify([this.own, this.links])) return;
    this.own = { ...own };
    this.links = unique;
    for (const listener of this.listeners) listener();
  }

  /** Calls `listener` whenever the links change; returns its removal. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The address this cluster dials for `podIP` of cluster `sourceCluster` (its id); undefined when not reachable. */
  importedAddress(sourceCluster: string, podIP: string): string | undefined {
    const own = this.own;
    if (!own) return undefined;
    return this.dialAddress(podIP, { from: sourceCluster, to: own.id }, () => undefined);
  }

  /**
   * The address cluster `to` dials for `address` of cluster `from` (each by name or id): through
   * their gateways when a link joins them (undefined when the address is not one of `from`'s
   * pods: dialled there it would reach a pod of `to`'s own); otherwise what `unjoined` says.
   */
  dialAddress(
    address: string,
    clusters: { from: string; to: string },
    unjoined: (address: string) => string | undefined = (a) => a,
  ): string | undefined {
    if (clusters.from === clusters.to) return address;
    const link = this.links.find((l) => named(l.source, clusters.from) && named(l.importer, clusters.to));
    if (!link) return unjoined(address);
    return remapAddress(address, link.podCidr, link.remappedCidr);
  }

  list(): readonly PeerLink[] {
    return this.links;
  }
}
