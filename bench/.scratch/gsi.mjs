import { startStack } from '../../dist/emulator/stack.js';
import { DynamoDBClient, CreateTableCommand, PutItemCommand, TransactWriteItemsCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
const stack = await startStack({ dynamodbPort: 0, awsPort: 0, startTimeoutSeconds: 90 });
try {
  const c = new DynamoDBClient({ region: 'us-east-1', endpoint: stack.env.AWS_ENDPOINT_URL_DYNAMODB, credentials: { accessKeyId: 'l', secretAccessKey: 'l' } });
  await c.send(new CreateTableCommand({ TableName: 'ggg', BillingMode: 'PAY_PER_REQUEST', KeySchema: [{ AttributeName: 'PK', KeyType: 'HASH' }, { AttributeName: 'SK', KeyType: 'RANGE' }], AttributeDefinitions: ['PK','SK','G1','G1S'].map((n) => ({ AttributeName: n, AttributeType: 'S' })), GlobalSecondaryIndexes: [{ IndexName: 'GSI1', KeySchema: [{ AttributeName: 'G1', KeyType: 'HASH' }, { AttributeName: 'G1S', KeyType: 'RANGE' }], Projection: { ProjectionType: 'ALL' } }] }));
  for (const rc of ['TOTAL', 'INDEXES']) {
    const o = await c.send(new PutItemCommand({ TableName: 'ggg', Item: { PK: { S: 'a'+rc }, SK: { S: '1' }, G1: { S: 'g' }, G1S: { S: 's' } }, ReturnConsumedCapacity: rc }));
    console.log('put with gsi', rc, JSON.stringify(o.ConsumedCapacity));
    const o2 = await c.send(new PutItemCommand({ TableName: 'ggg', Item: { PK: { S: 'b'+rc }, SK: { S: '1' } }, ReturnConsumedCapacity: rc }));
    console.log('put no gsi attrs', rc, JSON.stringify(o2.ConsumedCapacity));
    const o3 = await c.send(new TransactWriteItemsCommand({ TransactItems: [{ Put: { TableName: 'ggg', Item: { PK: { S: 'c'+rc }, SK: { S: '1' }, G1: { S: 'g' }, G1S: { S: 's' } } } }], ReturnConsumedCapacity: rc }));
    console.log('twi with gsi', rc, JSON.stringify(o3.ConsumedCapacity));
    const o4 = await c.send(new QueryCommand({ TableName: 'ggg', IndexName: 'GSI1', KeyConditionExpression: 'G1 = :g', ExpressionAttributeValues: { ':g': { S: 'g' } }, ReturnConsumedCapacity: rc }));
    console.log('query gsi', rc, JSON.stringify(o4.ConsumedCapacity));
  }
} finally { await stack.stop(); }
