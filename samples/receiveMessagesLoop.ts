/** Receive in a loop with receiveMessages, completing each message. */
import { ServiceBusClient, delay } from "@azure/service-bus";

const connectionString = process.env.SERVICEBUS_CONNECTION_STRING || "<connection string>";
const queueName = process.env.QUEUE_NAME || "<queue name>";

export async function main() {
  const sbClient = new ServiceBusClient(connectionString);
  const sender = sbClient.createSender(queueName);
  await sender.sendMessages([1, 2, 3, 4, 5].map((n) => ({ body: { n } })));
  const queueReceiver = sbClient.createReceiver(queueName);
  try {
    let received = 0;
    for (let i = 0; i < 10 && received < 5; ++i) {
      const messages = await queueReceiver.receiveMessages(2, { maxWaitTimeInMs: 2000 });
      if (!messages.length) {
        console.log("No more messages to receive");
        break;
      }
      for (const message of messages) {
        console.log(`Received message #${i}: ${JSON.stringify(message.body)}`);
        await queueReceiver.completeMessage(message);
        received++;
      }
      await delay(10);
    }
    if (received !== 5) throw new Error(`expected 5 messages, got ${received}`);
    await queueReceiver.close();
  } finally {
    await sbClient.close();
  }
}

main().catch((err) => {
  console.log("receiveMessagesLoop Sample - Error occurred: ", err);
  process.exit(1);
});
