/** The pod network between peered clusters: gateways, tunnels, remapping and the filter. */
export { REMAP_POOL, remapAddress } from "./addresses.js";
export { GATEWAY_PORT, type GatewayConfig, TUNNEL_INTERFACE } from "./config.js";
export { NetworkController, type NetworkControllerOptions, REMAPS_CONFIGMAP } from "./controller.js";
export { EXCHANGE_LABEL, exchangeConfigMapName, PUBLIC_GATEWAY_CONFIGMAP } from "./exchange.js";
export { GATEWAY_OBJECTS } from "./gateway/agent.js";
export { GATEWAY_NAME, type GatewayPlacement, gatewayFromFlags, POD_ROUTES_ANNOTATION } from "./manifests.js";
export { type ClusterRef, PeerAddresses, type PeerLink } from "./peer-addresses.js";
export { GATEWAY_TABLE } from "./rules.js";
