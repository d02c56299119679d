/**
 * Where an endpoint of one cluster is, as seen from another. The clusters' pod networks may
 * overlap (every local cluster here uses the same pod CIDR), so an address is only meaningful in
 * its own cluster until a gateway joins the networks and says how each cluster reaches the
 * others' pods (a remapped range per peer, as Liqo's gateway does). Until then the address is
 * passed on as it is: names resolve and slices are complete, and traffic reaches them once the
 * networks are joined.
 */

/** An endpoint address of cluster `from` as cluster `to` must dial it; undefined when `to` cannot reach it. */
export type AddressMapper = (address: string, clusters: { from: string; to: string }) => string | undefined;

/** No gateway: every cluster is given the source cluster's own address. */
export const unmappedAddresses: AddressMapper = (address) => address;
