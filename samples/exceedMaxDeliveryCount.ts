/** Abandon a message until it exceeds the queue's max delivery count and is dead-lettered. */
import { ServiceBusClient } from "@azure/service-bus";

const connectionString = process.env.SERVICEBUS_CONNECTION_STRING || "<connection string>";
const queueName = process.env.QUEUE_NAME || "<queue name>";

export async function main() {
  const sbClient = new ServiceBusClient(connectionString);
  await sbClient.createSender(queueName).sendMessages({ body: "poison" });
  const receiver = sbClient.createReceiver(queueName);
  for (;;) {
    const [message] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
    if (!message) break;
    console.log(`Delivery ${message.deliveryCount}: abandoning`);
    await receiver.abandonMessage(message);
  }
  const dlq = sbClient.createReceiver(queueName, { subQueueType: "deadLetter" });
  const [dead] = await dlq.receiveMessages(1, { maxWaitTimeInMs: 5000 });
  console.log(`Dead-lettered with reason ${dead?.deadLetterReason}`);
  if (dead?.deadLetterReason !== "MaxDeliveryCountExceeded") throw new Error("expected MaxDeliveryCountExceeded");
  await dlq.completeMessage(dead);
  await sbClient.close();
}

main().catch((err) => {
  console.log("exceedMaxDeliveryCount Sample - Error occurred: ", err);
  process.exit(1);
});
