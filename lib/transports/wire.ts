/** Parses a provider's JSON answer; undefined when the body is empty or not JSON (a proxy's HTML page). */
export const readJson = <T>(body: string): T | undefined => {
  if (!body) return undefined;
  try {
    const value = JSON.parse(body) as unknown;
    return value !== null && typeof value === 'object' ? (value as T) : undefined;
  } catch {
    return undefined;
  }
};

/**
 * A provider's error name as it may be recorded (ledger history, archive, logs): a short machine token
 * passes; free text — which can echo the destination address — becomes `http_<status>`.
 */
export const errorToken = (raw: unknown, status: number): string =>
  typeof raw === 'string' && /^[A-Za-z0-9_.:-]{1,64}$/.test(raw) ? raw : `http_${status}`;

/**
 * Resolves credentials before anything is sent. A failure here (secret store throttled or denied, a field
 * missing) means the request never left, so it must not be classified as an ambiguous send.
 */
export const resolveCredentials = async <T>(
  resolve: () => Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; reason: string }> => {
  try {
    return { ok: true, value: await resolve() };
  } catch (error) {
    return {
      ok: false,
      reason: `credentials_unavailable:${error instanceof Error ? error.name : 'unknown'}`,
    };
  }
};
