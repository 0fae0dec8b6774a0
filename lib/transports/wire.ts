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
