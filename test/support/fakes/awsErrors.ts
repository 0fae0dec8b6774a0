import type { Behaviour } from './ScriptedHttpServer.js';

/**
 * Error answers in the two AWS wire protocols our adapters speak, shaped as the services document them.
 * SES v2 is restJson1: the exception name travels in `x-amzn-ErrorType`, the body carries `message`.
 * End User Messaging SMS (pinpoint-sms-voice-v2) is awsJson1_0: the body carries `__type`.
 */
export const sesV2Error = (
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {},
): Behaviour => ({
  reply: status,
  headers: {
    'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazonaws.sesv2/`,
    ...headers,
  },
  body: { message },
});

export const awsJson10Error = (
  status: number,
  type: string,
  message: string,
  extra: Record<string, unknown> = {},
): Behaviour => ({
  reply: status,
  headers: { 'content-type': 'application/x-amz-json-1.0' },
  body: { __type: `com.amazonaws.pinpointsmsvoicev2#${type}`, message, ...extra },
});
