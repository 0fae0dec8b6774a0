/** The transport names a configuration may give (lib/config.ts's schema and lib/configFastPath.ts both read these). */
export const EMAIL_TRANSPORTS = ['ses', 'simulator', 'rest', 'resend', 'sendgrid'] as const;
export const SMS_TRANSPORTS = ['sms-v2', 'simulator', 'rest', 'twilio'] as const;
