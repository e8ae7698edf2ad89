import { startStack } from '/work/main/dist/emulator/stack.js';
import { DynamoDBClient, CreateTableCommand, PutItemCommand, UpdateItemCommand, GetItemCommand, QueryCommand, TransactWriteItemsCommand, TransactGetItemsCommand, BatchWriteItemCommand, BatchGetItemCommand, DeleteItemCommand } from '@aws-sdk/client-dynamodb';
const stack = await startStack({ dynamodbPort: 0, awsPort: 0, startTimeoutSeconds: 90 });
try {
  const c = new DynamoDBClient({ region: 'us-east-1', endpoint: stack.env.AWS_ENDPOINT_URL_DYNAMODB, credentials: { accessKeyId: 'l', secretAccessKey: 'l' } });
  await c.send(new CreateTableCommand({ TableName: 'ttt', BillingMode: 'PAY_PER_REQUEST', KeySchema: [{ AttributeName: 'PK', KeyType: 'HASH' }, { AttributeName: 'SK', KeyType: 'RANGE' }], AttributeDefinitions: [{ AttributeName: 'PK', AttributeType: 'S' }, { AttributeName: 'SK', AttributeType: 'S' }] }));
  const R = { ReturnConsumedCapacity: 'TOTAL' };
  const big = 'x'.repeat(2500);
  const show = async (name, cmd) => { try { const o = await c.send(cmd); console.log(name, JSON.stringify(o.ConsumedCapacity)); } catch (e) { console.log(name, 'ERR', e.name, e.message); } };
  await show('Put small', new PutItemCommand({ TableName: 'ttt', Item: { PK: { S: 'a' }, SK: { S: '1' } }, ...R }));
  await show('Put 2.5KB', new PutItemCommand({ TableName: 'ttt', Item: { PK: { S: 'a' }, SK: { S: '2' }, v: { S: big } }, ...R }));
  await show('Update', new UpdateItemCommand({ TableName: 'ttt', Key: { PK: { S: 'a' }, SK: { S: '2' } }, UpdateExpression: 'SET n = :n', ExpressionAttributeValues: { ':n': { N: '1' } }, ...R }));
  await show('Get', new GetItemCommand({ TableName: 'ttt', Key: { PK: { S: 'a' }, SK: { S: '2' } }, ...R }));
  await show('Get strong', new GetItemCommand({ TableName: 'ttt', Key: { PK: { S: 'a' }, SK: { S: '2' } }, ConsistentRead: true, ...R }));
  await show('Query', new QueryCommand({ TableName: 'ttt', KeyConditionExpression: 'PK = :p', ExpressionAttributeValues: { ':p': { S: 'a' } }, ...R }));
  await show('Query strong', new QueryCommand({ TableName: 'ttt', KeyConditionExpression: 'PK = :p', ConsistentRead: true, ExpressionAttributeValues: { ':p': { S: 'a' } }, ...R }));
  await show('TWI', new TransactWriteItemsCommand({ TransactItems: [{ Put: { TableName: 'ttt', Item: { PK: { S: 'b' }, SK: { S: '1' }, v: { S: big } } } }, { Put: { TableName: 'ttt', Item: { PK: { S: 'b' }, SK: { S: '2' } } } }], ...R }));
  await show('TGI', new TransactGetItemsCommand({ TransactItems: [{ Get: { TableName: 'ttt', Key: { PK: { S: 'b' }, SK: { S: '1' } } } }], ...R }));
  await show('BWI', new BatchWriteItemCommand({ RequestItems: { ttt: [{ PutRequest: { Item: { PK: { S: 'c' }, SK: { S: '1' } } } }] }, ...R }));
  await show('BGI', new BatchGetItemCommand({ RequestItems: { ttt: { Keys: [{ PK: { S: 'c' }, SK: { S: '1' } }] } }, ...R }));
  await show('Delete', new DeleteItemCommand({ TableName: 'ttt', Key: { PK: { S: 'c' }, SK: { S: '1' } }, ...R }));
  await show('Put cond fail', new PutItemCommand({ TableName: 'ttt', Item: { PK: { S: 'a' }, SK: { S: '1' } }, ConditionExpression: 'attribute_not_exists(PK)', ...R }));
  try { await c.send(new TransactWriteItemsCommand({ TransactItems: [{ Put: { TableName: 'ttt', Item: { PK: { S: 'a' }, SK: { S: '1' } }, ConditionExpression: 'attribute_not_exists(PK)' } }], ...R })); } catch (e) { console.log('TWI cancel', e.name, JSON.stringify(e.ConsumedCapacity), Object.keys(e)); }
} finally { await stack.stop(); }
