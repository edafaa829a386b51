/** Create, read, update, list and delete a queue with ServiceBusAdministrationClient. */
import { ServiceBusAdministrationClient } from "@azure/service-bus";

const connectionString = process.env.SERVICEBUS_CONNECTION_STRING || "<connection string>";
const queueName = process.env.QUEUE_NAME || "<queue name>";

export async function main() {
  const serviceBusAdministrationClient = new ServiceBusAdministrationClient(connectionString);
  const createQueueResponse = await serviceBusAdministrationClient.createQueue(queueName, { lockDuration: "PT45S" });
  console.log("Created queue with name - ", createQueueResponse.name);

  const getQueueResponse = await serviceBusAdministrationClient.getQueue(queueName);
  console.log("(Current)max delivery count = ", getQueueResponse.maxDeliveryCount);
  getQueueResponse.maxDeliveryCount = 12;
  const updateQueueResponse = await serviceBusAdministrationClient.updateQueue(getQueueResponse);
  console.log("(Updated)max delivery count = ", updateQueueResponse.maxDeliveryCount);

  const queueRuntimeProperties = await serviceBusAdministrationClient.getQueueRuntimeProperties(queueName);
  console.log("Number of messages in the queue = ", queueRuntimeProperties.totalMessageCount);

  let count = 0;
  for await (const queue of serviceBusAdministrationClient.listQueues()) if (queue.name === queueName) count++;
  for await (const page of serviceBusAdministrationClient.listQueues().byPage({ maxPageSize: 2 })) console.log(`A page of ${page.length}`);

  await serviceBusAdministrationClient.deleteQueue(queueName);
  const exists = await serviceBusAdministrationClient.queueExists(queueName);
  if (exists || count !== 1 || updateQueueResponse.maxDeliveryCount !== 12) throw new Error("administration went wrong");
  console.log("Queue exists after delete: ", exists);
}

main().catch((err) => {
  console.log("administrationClient Sample - Error occurred: ", err);
  process.exit(1);
});
