/** Browse (peek) messages without locking or removing them. */
import { ServiceBusClient } from "@azure/service-bus";

const connectionString = process.env.SERVICEBUS_CONNECTION_STRING || "<connection string>";
const queueName = process.env.QUEUE_NAME || "<queue name>";

export async function main() {
  const sbClient = new ServiceBusClient(connectionString);
  await sbClient.createSender(queueName).sendMessages([{ body: "one", subject: "first" }, { body: "two" }, { body: "three" }]);
  const queueReceiver = sbClient.createReceiver(queueName);
  try {
    for (let i = 0; i < 3; i++) {
      const [message] = await queueReceiver.peekMessages(1);
      if (!message) {
        console.log("No more messages to peek");
        break;
      }
      console.log(`Peeking message #${i}: ${message.body} (sequence number ${message.sequenceNumber?.toString()})`);
    }
    const all = await queueReceiver.peekMessages(10, { fromSequenceNumber: (await queueReceiver.peekMessages(1, { fromSequenceNumber: undefined }))[0]?.sequenceNumber });
    console.log(`Peeked ${all.length} more`);
    await queueReceiver.close();
  } finally {
    await sbClient.close();
  }
}

main().catch((err) => {
  console.log("browseMessages Sample - Error occurred: ", err);
  process.exit(1);
});
