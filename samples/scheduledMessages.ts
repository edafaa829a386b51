/** Schedule messages for later, cancel one, and see the other arrive on time. */
import { ServiceBusClient, delay } from "@azure/service-bus";

const connectionString = process.env.SERVICEBUS_CONNECTION_STRING || "<connection string>";
const queueName = process.env.QUEUE_NAME || "<queue name>";

export async function main() {
  const sbClient = new ServiceBusClient(connectionString);
  const sender = sbClient.createSender(queueName);
  const scheduledEnqueueTimeUtc = new Date(Date.now() + 2000);
  const [kept, cancelled] = await sender.scheduleMessages([{ body: "on time" }, { body: "never" }], scheduledEnqueueTimeUtc);
  console.log(`Scheduled ${kept?.toString()} and ${cancelled?.toString()}`);
  await sender.cancelScheduledMessages(cancelled!);
  const receiver = sbClient.createReceiver(queueName);
  const early = await receiver.receiveMessages(1, { maxWaitTimeInMs: 100 });
  console.log(`Received ${early.length} before the scheduled time`);
  await delay(2000);
  const messages = await receiver.receiveMessages(2, { maxWaitTimeInMs: 5000 });
  for (const m of messages) {
    console.log(`Received scheduled message: ${m.body}`);
    await receiver.completeMessage(m);
  }
  if (messages.length !== 1 || messages[0]!.body !== "on time") throw new Error("expected only the kept message");
  await sbClient.close();
}

main().catch((err) => {
  console.log("scheduledMessages Sample - Error occurred: ", err);
  process.exit(1);
});
