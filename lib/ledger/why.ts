/**
 * A history entry's `why` is a short machine-readable phrase (`provider_timeout_after_send`,
 * `rejected:550 mailbox unavailable`); provider text can be long, and every entry stays on the row
 * forever, so every writer bounds it here, once, and no caller can bloat the 1 KB row.
 */
export const WHY_MAX = 120;
/** An operator decision's `why` also carries the decision id and the operator's reason. */
export const DECISION_WHY_MAX = 240;

export const boundWhy = (why: string, max: number = WHY_MAX): string => why.slice(0, max);
