// Prices and the per-call latency model. Every number here is an input the README states.

/** us-east-1 list prices, on-demand / standard. Checked 2026-06 against AWS pricing pages as quoted by third-party guides. */
export const PRICES = {
  asOf: '2026-06 (DynamoDB on-demand after the 2024-11 price cut)',
  region: 'us-east-1',
  dynamodbWriteRequestUnit: 0.625 / 1e6, // $ per WRU (1 KB standard write; transactional = 2)
  dynamodbReadRequestUnit: 0.125 / 1e6, // $ per RRU (4 KB strong read; eventual = 0.5; transactional = 2)
  dynamodbStorageGbMonth: 0.25, // $ per GB-month, Standard table class (first 25 GB free not applied)
  sqsRequest: 0.4 / 1e6, // $ per request (standard queue, each 64 KB chunk of a payload is a request)
  s3Put: 0.005 / 1e3, // $ per PUT/COPY/POST/LIST
  s3Get: 0.0004 / 1e3, // $ per GET/HEAD
};

/**
 * Assumed in-region latency per call (ms), used only for the modelled AWS latency. Typical p50s
 * for a client in the same region; not measured here (the emulators are not AWS).
 */
export const CALL_LATENCY_MS = {
  TransactWriteItems: 10,
  TransactGetItems: 8,
  GetItem: 5,
  Query: 5,
  Scan: 10,
  PutItem: 7,
  UpdateItem: 7,
  DeleteItem: 7,
  BatchWriteItem: 10,
  BatchGetItem: 7,
  SendMessage: 10,
  SendMessageBatch: 12,
  DeleteMessage: 10,
  DeleteMessageBatch: 12,
  ChangeMessageVisibility: 10,
  ChangeMessageVisibilityBatch: 12,
  PutObject: 30,
  GetObject: 20,
  HeadObject: 15,
  CreateSchedule: 40,
  // A message sent to an idle long-polling consumer: SendMessage returned -> ReceiveMessage returns.
  delivery: 20,
};
export const DEFAULT_CALL_LATENCY_MS = 10;

const S3_GETS = new Set(['GetObject', 'HeadObject']);
/** Dollars for a bag of per-run quantities. */
export function dollars({ wru = 0, rru = 0, sqsRequests = 0, s3 = {} }) {
  let s3cost = 0;
  for (const [cmd, n] of Object.entries(s3)) s3cost += n * (S3_GETS.has(cmd) ? PRICES.s3Get : PRICES.s3Put);
  const ddb = wru * PRICES.dynamodbWriteRequestUnit + rru * PRICES.dynamodbReadRequestUnit;
  const sqs = sqsRequests * PRICES.sqsRequest;
  return { ddb, sqs, s3: s3cost, total: ddb + sqs + s3cost };
}
