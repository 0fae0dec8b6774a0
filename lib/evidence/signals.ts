/**
 * Provider signals that are not about one message: a recipient's opt-out or opt-in reply, and a change of
 * our account's standing at a provider. The parsers hand them over on an `ignored` ParsedEvent (they are
 * not delivery evidence, so nothing records them as a fact); what acts on them (the suppression list with
 * source `provider_opt_out`, the transport-wide hold) reads `signal`.
 *
 * Inbound replies carry the sender's raw phone number. It lives in memory only, in `phone`: whatever stores
 * or logs a signal must first turn it into the suppression key it uses (never the number itself).
 */
export type ProviderSignal = OptSignal | AccountSignal;

export interface OptSignal {
  /** `opt_out`: the recipient asked to stop (STOP and its documented synonyms); `opt_in`: to start again. */
  kind: 'opt_out' | 'opt_in';
  channel: 'sms';
  provider: 'sms-v2' | 'twilio';
  /** The recipient's number, E.164, as the provider sent it. Raw: never store or log it as it is. */
  phone: string;
  /** Our number (or sender) that received the reply; not personal data. */
  ourNumber?: string;
  /** The keyword that decided the signal, upper case (`STOP`, `START`). */
  keyword: string;
  /** The provider's id of the inbound message: the same reply seen twice is one signal. */
  evidenceId: string;
}

export interface AccountSignal {
  kind: 'account_status';
  provider: 'sendgrid';
  /** The provider's word for it (SendGrid `type`: compliance_suspend, compliance_deactivate, compliance_ban, reactivate). */
  status: string;
  /** `held`: the provider blocks delivery of our messages; `restored`: it sends again. */
  effect: 'held' | 'restored';
  evidenceId: string;
  /** When the provider says it happened (epoch ms). */
  at?: number;
}

/**
 * End User Messaging SMS: the opt-out keywords it requires where local rules do ("Required opt-out
 * keywords": ARRET, CANCEL, END, OPT-OUT, OPTOUT, QUIT, REMOVE, STOP, TD, UNSUBSCRIBE) and the opt-in
 * keywords it names for a number that lets recipients resubscribe (UNSTOP, START).
 */
export const SMS_V2_OPT_OUT_KEYWORDS: readonly string[] = [
  'ARRET',
  'CANCEL',
  'END',
  'OPT-OUT',
  'OPTOUT',
  'QUIT',
  'REMOVE',
  'STOP',
  'TD',
  'UNSUBSCRIBE',
];
export const SMS_V2_OPT_IN_KEYWORDS: readonly string[] = ['START', 'UNSTOP'];
