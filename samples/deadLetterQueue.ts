/** Dead-letter a message, read it from the dead-letter queue, fix it and send it again. */
import { ServiceBusClient } from "@azure/service-bus";

const connectionString = process.env.SERVICEBUS_CONNECTION_STRING || "<connection string>";
const queueName = process.env.QUEUE_NAME || "<queue name>";

export async function main() {
  const sbClient = new ServiceBusClient(connectionString);
  const sender = sbClient.createSender(queueName);
  await sender.sendMessages({ body: { name: "Creamy Chicken Pasta", type: "Dinner" }, contentType: "application/json", subject: "Recipe" });
  const receiver = sbClient.createReceiver(queueName);
  const [message] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5000 });
  await receiver.deadLetterMessage(message!, { deadLetterReason: "Incorrect Recipe type", deadLetterErrorDescription: "Recipe type does not match preferences." });

  const deadLetterReceiver = sbClient.createReceiver(queueName, { subQueueType: "deadLetter" });
  const [dead] = await deadLetterReceiver.receiveMessages(1, { maxWaitTimeInMs: 5000 });
  console.log(`Dead letter: ${JSON.stringify(dead!.body)} because ${dead!.deadLetterReason}`);
  // Fix it and send it back: a received message can be passed to sendMessages.
  dead!.body = { ...dead!.body, type: "Lunch" };
  await sender.sendMessages(dead!);
  await deadLetterReceiver.completeMessage(dead!);

  const [fixed] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5000 });
  console.log(`Resent: ${JSON.stringify(fixed!.body)}`);
  if (fixed!.body.type !== "Lunch" || fixed!.subject !== "Recipe") throw new Error("resend lost fields");
  await receiver.completeMessage(fixed!);
  await sbClient.close();
}

main().catch((err) => {
  console.log("deadLetterQueue Sample - Error occurred: ", err);
  process.exit(1);
});
