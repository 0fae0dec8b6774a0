/**
 * The provider-circuit metric names. Their own module: the dispatcher records failovers with them on
 * every function's path, while lib/transports/health.ts (the circuits themselves) loads only when a
 * channel fails over (lib/dispatchRuntime.ts `circuitsFor`).
 */
export const CIRCUIT_METRIC = {
  /** One per opening, dimension `provider`: alarmed (infra/constructs/Alarms.ts). */
  opened: 'ProviderCircuitOpened',
  closed: 'ProviderCircuitClosed',
  /** A row moved off a provider (dimension `provider`, the one it left): alarmed. */
  failovers: 'ProviderFailovers',
} as const;
