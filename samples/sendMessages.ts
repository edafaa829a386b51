/** Send one message, an array, and a batch filled with tryAddMessage. */
import { ServiceBusClient, type ServiceBusMessage } from "@azure/service-bus";

const connectionString = process.env.SERVICEBUS_CONNECTION_STRING || "<connection string>";
const queueName = process.env.QUEUE_NAME || "<queue name>";

const firstSetOfMessages: ServiceBusMessage[] = [
  { body: "Albert Einstein" },
  { body: "Werner Heisenberg" },
  { body: "Marie Curie" },
];
const secondSetOfMessages: ServiceBusMessage[] = [{ body: "Niels Bohr" }, { body: "Michael Faraday" }];

export async function main() {
  const sbClient = new ServiceBusClient(connectionString);
  const sender = sbClient.createSender(queueName);
  try {
    await sender.sendMessages({ body: "Isaac Newton", applicationProperties: { century: 17 } });
    await sender.sendMessages(firstSetOfMessages);
    let batch = await sender.createMessageBatch();
    for (const message of secondSetOfMessages) {
      if (!batch.tryAddMessage(message)) {
        await sender.sendMessages(batch);
        batch = await sender.createMessageBatch();
        if (!batch.tryAddMessage(message)) throw new Error("Message too big to fit in a batch");
      }
    }
    await sender.sendMessages(batch);
    console.log(`Sent ${1 + firstSetOfMessages.length + batch.count} messages`);
    await sender.close();
  } finally {
    await sbClient.close();
  }
}

main().catch((err) => {
  console.log("sendMessages Sample: Error occurred: ", err);
  process.exit(1);
});
