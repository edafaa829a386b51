/** Streaming receive with subscribe: handlers run as messages arrive. */
import { ServiceBusClient, delay, isServiceBusError, type ProcessErrorArgs, type ServiceBusReceivedMessage } from "@azure/service-bus";

const connectionString = process.env.SERVICEBUS_CONNECTION_STRING || "<connection string>";
const queueName = process.env.QUEUE_NAME || "<queue name>";

export async function main() {
  const sbClient = new ServiceBusClient(connectionString);
  await sbClient.createSender(queueName).sendMessages([{ body: "a" }, { body: "b" }, { body: "c" }]);
  const receiver = sbClient.createReceiver(queueName);
  let count = 0;

  const processMessage = async (message: ServiceBusReceivedMessage) => {
    console.log(`Received message: ${message.body}`);
    count++;
  };
  const processError = async (args: ProcessErrorArgs) => {
    console.log(`Error from error source ${args.errorSource} occurred: `, args.error);
    if (isServiceBusError(args.error)) {
      switch (args.error.code) {
        case "MessagingEntityDisabled":
        case "MessagingEntityNotFound":
        case "UnauthorizedAccess":
          console.log(`An unrecoverable error occurred. Stopping processing. ${args.error.code}`, args.error);
          await subscription.close();
          break;
        case "MessageLockLost":
          console.log(`Message lock lost for message`, args.error);
          break;
        case "ServiceBusy":
          await delay(1000);
          break;
      }
    }
  };

  const subscription = receiver.subscribe({ processMessage, processError }, { maxConcurrentCalls: 2 });
  for (let i = 0; i < 100 && count < 3; i++) await delay(100);
  await subscription.close();
  await receiver.close();
  await sbClient.close();
  if (count !== 3) throw new Error(`expected 3 messages, got ${count}`);
}

main().catch((err) => {
  console.log("receiveMessagesStreaming Sample: Error occurred: ", err);
  process.exit(1);
});
