/**
 * How the console names Athena as an archive figure's source. Apart from athenaAuditQueries.ts (which
 * imports the Athena SDK) so the console can show it before that module loads (lazyAuditQueries.ts).
 */
export const athenaEngine = (workGroup: string): string => `Athena (workgroup ${workGroup})`;
