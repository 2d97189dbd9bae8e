/**
 * Where a request comes from: the client's own address (what log lines show) and the network
 * that per-address counters and limits count (`server.clientNetworks`: by default the address
 * itself for IPv4, its /64 for IPv6).
 */
export interface ClientAddress {
  readonly address: string;
  readonly network: string;
}

/** The client address, computed only when a check needs it (never on a cache hit). */
export interface ClientAddressSource {
  clientAddress(): ClientAddress;
}
