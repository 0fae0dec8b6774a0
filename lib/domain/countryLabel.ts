/** The label a metric or a ledger reason may carry: the country code, or `ZZ` (unknown region). */
export const countryLabel = (country: string | undefined): string => country ?? 'ZZ';
