/**
 * Keep a workflow's state beside its messages: each message of a shopping session moves the
 * session state on, and a receiver that takes the session over later continues from it.
 */
import { ServiceBusClient } from "@azure/service-bus";

const connectionString = process.env.SERVICEBUS_CONNECTION_STRING || "<connection string>";
const queueName = process.env.QUEUE_NAME || "<queue name>";

interface Cart {
  items: string[];
  checkedOut: boolean;
}

export async function main() {
  const sbClient = new ServiceBusClient(connectionString);
  const sender = sbClient.createSender(queueName);
  await sender.sendMessages([
    { body: { event: "add", item: "pencil" }, sessionId: "alice" },
    { body: { event: "add", item: "notebook" }, sessionId: "alice" },
  ]);

  // First receiver: processes what is there, saves the cart, goes away.
  const first = await sbClient.acceptSession(queueName, "alice");
  let cart: Cart = (await first.getSessionState()) ?? { items: [], checkedOut: false };
  for (const message of await first.receiveMessages(10, { maxWaitTimeInMs: 5000 })) {
    cart.items.push(message.body.item);
    await first.setSessionState(cart);
    await first.completeMessage(message);
  }
  await first.close();

  await sender.sendMessages({ body: { event: "checkout" }, sessionId: "alice" });

  // Second receiver: picks up the cart where the first left it.
  const second = await sbClient.acceptNextSession(queueName);
  cart = await second.getSessionState();
  console.log(`Session ${second.sessionId} resumes with ${cart.items.join(", ")}`);
  for (const message of await second.receiveMessages(10, { maxWaitTimeInMs: 5000 })) {
    if (message.body.event === "checkout") cart.checkedOut = true;
    await second.completeMessage(message);
  }
  await second.setSessionState(cart);
  console.log(`Session ${second.sessionId}: ${JSON.stringify(await second.getSessionState())}`);
  await second.close();
  await sbClient.close();
  if (!cart.checkedOut || cart.items.join() !== "pencil,notebook") throw new Error(`unexpected cart ${JSON.stringify(cart)}`);
}

main().catch((err) => {
  console.log("sessionState Sample: Error occurred: ", err);
  process.exit(1);
});
