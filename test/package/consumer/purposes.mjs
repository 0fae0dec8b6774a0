/** The consumer's own purpose policy, shared by its CDK app (props.purposes) and its publisher. */
export const ORDER_SHIPPED = {
  purpose: 'order-shipped',
  policyVersion: 'order-shipped/1',
  templateRevisionInKey: false,
  expiryRequired: false,
  maxAttempts: 4,
  ambiguityDeadlineSeconds: 3600,
  defaultDelivery: 'fallback',
  attachments: 'forbidden',
  retentionDays: 90,
};
