import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { SendproofError } from '../domain/errors.js';
import type {
  AnnotationRequest,
  CancelCommitResult,
  CancelMarker,
  CancelOrder,
  TransitionEntry,
} from './port.js';
import { LEDGER_TABLE } from './tableDefinition.js';

export const CANCEL_PREFIX = 'cancel#';

export const cancelMarkerKey = (tenant: string, eventId: string): string =>
  `${CANCEL_PREFIX}${tenant}:${eventId}`;

/**
 * Appends one order to the event's marker, creating it if absent. Conditional: a scope already
 * committed is refused and the first order is returned, so a repeated cancel changes nothing.
 */
export const commitCancel = async (
  client: DynamoDBDocumentClient,
  table: string,
  tenant: string,
  eventId: string,
  order: CancelOrder,
  ttl: number,
): Promise<CancelCommitResult> => {
  try {
    await client.send(
      new UpdateCommand({
        TableName: table,
        Key: { [LEDGER_TABLE.partitionKey]: cancelMarkerKey(tenant, eventId) },
        UpdateExpression:
          'SET #kind = :kind, #tenant = :tenant, #cancelOf = :eventId, #ttl = if_not_exists(#ttl, :ttl), ' +
          '#orders = list_append(if_not_exists(#orders, :none), :order) ADD #ids :id',
        ConditionExpression: 'attribute_not_exists(#ids) OR NOT contains(#ids, :idValue)',
        ExpressionAttributeNames: {
          '#kind': 'kind',
          '#tenant': 'tenant',
          // Not `eventId`: the marker is not a row of the event (findByEvent, `status`, the archive).
          '#cancelOf': 'cancelOf',
          '#ttl': 'ttl',
          '#orders': 'orders',
          '#ids': 'orderIds',
        },
        ExpressionAttributeValues: {
          ':kind': 'cancel',
          ':tenant': tenant,
          ':eventId': eventId,
          ':ttl': ttl,
          ':none': [],
          ':order': [order],
          ':id': new Set([order.id]),
          ':idValue': order.id,
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return { kind: 'committed', order };
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    const old = error.Item ? (unmarshall(error.Item) as { orders?: CancelOrder[] }) : undefined;
    const first = old?.orders?.find((o) => o.id === order.id);
    if (!first)
      throw new SendproofError(
        'retryable',
        'cancel_marker_unreadable',
        `cancel ${order.id} of ${eventId} refused without a committed order`,
      );
    return { kind: 'exists', order: first };
  }
};

export const getCancelMarker = async (
  client: DynamoDBDocumentClient,
  table: string,
  tenant: string,
  eventId: string,
): Promise<CancelMarker | undefined> => {
  const out = await client.send(
    new GetCommand({
      TableName: table,
      Key: { [LEDGER_TABLE.partitionKey]: cancelMarkerKey(tenant, eventId) },
      ConsistentRead: true,
    }),
  );
  if (!out.Item) return undefined;
  const { orderIds: _ids, cancelOf, ...marker } = out.Item;
  return { ...marker, eventId: cancelOf } as CancelMarker;
};

/** One history entry in the row's current state: a recorded fact, not a transition. */
export const annotate = async (
  client: DynamoDBDocumentClient,
  table: string,
  request: AnnotationRequest,
): Promise<boolean> => {
  const entry: TransitionEntry = { s: request.state, at: request.now, by: request.by, why: request.why };
  try {
    await client.send(
      new UpdateCommand({
        TableName: table,
        Key: { [LEDGER_TABLE.partitionKey]: request.pk },
        UpdateExpression:
          'SET #version = #version + :one, #history = list_append(#history, :entry), #updatedAt = :now',
        ConditionExpression: '#version = :expected AND #state = :state',
        ExpressionAttributeNames: {
          '#version': 'version',
          '#history': 'history',
          '#updatedAt': 'updatedAt',
          '#state': 'state',
        },
        ExpressionAttributeValues: {
          ':one': 1,
          ':entry': [entry],
          ':now': request.now,
          ':expected': request.expectedVersion,
          ':state': request.state,
        },
      }),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
};
