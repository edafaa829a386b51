/** Defer messages that arrive out of order and receive them later by sequence number. */
import { ServiceBusClient, type ServiceBusReceivedMessage } from "@azure/service-bus";

const connectionString = process.env.SERVICEBUS_CONNECTION_STRING || "<connection string>";
const queueName = process.env.QUEUE_NAME || "<queue name>";

export async function main() {
  const sbClient = new ServiceBusClient(connectionString);
  const instructions = ["Step 2: mix", "Step 1: gather", "Step 3: bake"];
  await sbClient.createSender(queueName).sendMessages(instructions.map((body, i) => ({ body, subject: "Recipe", messageId: `step-${i}` })));
  const receiver = sbClient.createReceiver(queueName);
  const deferred = new Map<string, ServiceBusReceivedMessage["sequenceNumber"]>();
  const done: string[] = [];
  const messages = await receiver.receiveMessages(3, { maxWaitTimeInMs: 5000 });
  for (const message of messages) {
    const step = String(message.body).slice(0, 6);
    if (step === `Step ${done.length + 1}`) {
      done.push(message.body);
      await receiver.completeMessage(message);
    } else {
      deferred.set(step, message.sequenceNumber);
      await receiver.deferMessage(message);
    }
  }
  while (deferred.size) {
    const step = `Step ${done.length + 1}`;
    const [message] = await receiver.receiveDeferredMessages(deferred.get(step)!);
    done.push(message!.body);
    await receiver.completeMessage(message!);
    deferred.delete(step);
  }
  console.log(done.join(", "));
  if (done.join() !== "Step 1: gather,Step 2: mix,Step 3: bake") throw new Error("out of order");
  await sbClient.close();
}

main().catch((err) => {
  console.log("deferral Sample - Error occurred: ", err);
  process.exit(1);
});
