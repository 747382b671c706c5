#!/usr/bin/env python3
"""Regenerate pairs.jsonl: training pairs for the semantic-cache hit verifier.

All questions below are hand-written seeds with hand-written variations.
A seed line "A <lang> | <query>" starts a group; "+ <kind> | <text>" is a
variation with the same answer (same=true); "- <kind> | <text>" is a hard
negative that needs a different answer (same=false). Each variation is paired
with its seed query. Long pasted messages are composed from hand-written
paragraphs (see LONG_EN / LONG_ZH). Output is deterministic.

Usage: python3 make_pairs.py   (writes pairs.jsonl next to this file)
"""
import json
import os
import random
import re

TRUE_KINDS = {"paraphrase", "reorder", "politeness", "typo", "same_number", "a_not_a", "long"}
FALSE_KINDS = {"number", "negation", "antonym", "object", "qualifier", "topic", "long"}

SEEDS_EN = r"""
# English seeds. "A en | query" starts a seed; "+ kind | text" is a variant with the
# same answer (same=true); "- kind | text" is a hard negative (same=false).

A en | How long does standard shipping take?
+ paraphrase | What's the usual delivery time with standard shipping?
+ paraphrase | If I pick regular delivery, how many days until it gets to me?
+ politeness | Hi! Quick question: how long does standard shipping take? Thanks a lot.
+ typo | how long does standrad shiping take
+ reorder | Standard shipping: how long does it take?
- qualifier | How long does standard shipping take to Canada?
- object | How long does express shipping take?
- topic | How much does standard shipping cost?
- qualifier | How long does standard shipping take during the holidays?

A en | How much is shipping?
+ paraphrase | What do you charge for delivery?
+ paraphrase | What's the shipping fee?
+ politeness | hey, how much is shipping? thx
+ typo | How much is shiping??
- qualifier | How much is shipping for oversized items?
- qualifier | How much is shipping to Alaska?
- topic | Do you ship to Alaska?
- object | How much is return shipping?

A en | Do you offer free shipping on orders over $50?
+ same_number | Do you offer free shipping on orders over 50 dollars?
+ paraphrase | If I spend more than $50, is delivery free?
+ same_number | Is shipping free for orders above fifty dollars?
+ typo | do u offer free shiping on orders over $50
- number | Do you offer free shipping on orders over $35?
- number | Do you offer free shipping on orders over $500?
- qualifier | Do you offer free shipping on orders over $50 to Hawaii?
- object | Do you offer free returns on orders over $50?

A en | Can I change my shipping address after placing an order?
+ paraphrase | Is it possible to update the delivery address once the order is placed?
+ paraphrase | I already checked out. Can I still edit where it ships to?
+ politeness | Hello, could you tell me if I can change my shipping address after placing an order? Thank you!
+ reorder | After placing an order, can I change my shipping address?
- object | Can I change my payment method after placing an order?
- qualifier | Can I change my shipping address after the order has shipped?
- negation | Why can't I change my shipping address after placing an order?
- object | Can I change my billing address after placing an order?

A en | Where is my order?
+ paraphrase | Can you tell me the status of my order?
+ paraphrase | Any update on where my purchase is right now?
+ politeness | Hi, where is my order please?
+ typo | wheres my ordr
- object | Where is my refund?
- topic | Can I cancel my order?
- object | Where is my invoice?

A en | What's the status of order 10482?
+ typo | whats the status of order #10482
+ paraphrase | Can you check where order number 10482 is?
+ politeness | Hi, could you please check the status of order 10482? Thanks
+ reorder | Order 10482: what's its status?
- number | What's the status of order 10428?
- number | What's the status of order 10483?
- object | Can I cancel order 10482?
- topic | When was order 10482 placed?

A en | How do I track my order?
+ paraphrase | Where can I follow my package's delivery progress?
+ paraphrase | Is there a way to see where my shipment is?
+ typo | How do I trak my order?
+ politeness | Hi there, how do I track my order? Thanks!
- object | How do I cancel my order?
- object | How do I return my order?
- qualifier | How do I track my order without an account?
- topic | Why hasn't my tracking number updated?

A en | Can I cancel my order?
+ paraphrase | Is it possible to call off my purchase?
+ paraphrase | I want to cancel my order. Is that possible?
+ politeness | Hello, can I cancel my order, please?
+ typo | can i cancle my order
- qualifier | Can I cancel my order after it has shipped?
- qualifier | Can I cancel part of my order?
- object | Can I modify my order?
- negation | Why can't I cancel my order?

A en | What is your return policy?
+ paraphrase | How do returns work at your store?
+ paraphrase | What are the rules for sending items back?
+ politeness | Hi, could you explain your return policy? Thanks.
+ typo | whats ur return polcy
- qualifier | What is your return policy for shoes?
- qualifier | What is your return policy for sale items?
- object | What is your exchange policy?
- object | What is your price match policy?

A en | What is your return policy for shoes?
+ paraphrase | How do returns work for footwear?
+ typo | what is your return policy for shoes
+ reorder | For shoes, what is your return policy?
- qualifier | What is your return policy for worn shoes?
- object | What is your return policy for handbags?
- qualifier | What is your return policy?

A en | How many days do I have to return an item?
+ paraphrase | What's the return window?
+ paraphrase | How long after delivery can I still send something back?
+ typo | how many days do i have to retrun an item
+ politeness | Hey, quick one: how many days do I have to return an item?
- qualifier | How many days do I have to return an opened item?
- qualifier | How many days do I have to return an item bought on Black Friday?
- object | How many days do I have to exchange an item?
- topic | How many days does a refund take?

A en | Is the return window 30 days?
+ same_number | Is the return window thirty days?
+ paraphrase | Do I get 30 days to send things back?
+ typo | is the retrun window 30 days
+ same_number | Is the return window ３０ days?
- number | Is the return window 14 days?
- number | Is the return window 60 days?
- number | Is the return window 3 days?
- object | Is the warranty 30 days?

A en | Are sale items refundable?
+ paraphrase | Can I get my money back on discounted items?
+ paraphrase | Do you give refunds on things bought on sale?
+ typo | are sale items refundible?
+ politeness | Hi, are sale items refundable? thanks
- negation | Are sale items non-refundable?
- object | Are sale items exchangeable?
- qualifier | Are final sale items refundable?
- object | Are gift cards refundable?

A en | How long does a refund take?
+ paraphrase | When will I get my money back?
+ paraphrase | How many days until the refund hits my account?
+ politeness | Hello! How long does a refund usually take? Thank you
+ typo | how long dose a refund take
- qualifier | How long does a refund take to PayPal?
- qualifier | How long does a refund take for an international order?
- object | How long does an exchange take?
- topic | How do I request a refund?

A en | Can I get a refund without a receipt?
+ paraphrase | I lost my receipt. Can I still get my money back?
+ typo | can i get a refund w/o a receipt
+ politeness | hi there, can I get a refund without a receipt? thanks in advance
- object | Can I get an exchange without a receipt?
- qualifier | Can I get a refund without a receipt if I paid in cash?
- object | Can I get a refund without the original packaging?
- negation | Why can't I get a refund without a receipt?

A en | Do you accept PayPal?
+ paraphrase | Can I pay with PayPal?
+ paraphrase | Is PayPal one of your payment options?
+ typo | do you accept paypal
+ politeness | Hi, do you accept PayPal? Thanks!
- object | Do you accept Apple Pay?
- object | Do you accept American Express?
- negation | Why don't you accept PayPal anymore?
- qualifier | Do you accept PayPal for gift card purchases?

A en | Can I pay in installments?
+ paraphrase | Can I split my payment into several smaller payments?
+ typo | can i pay in instalments?
+ politeness | Hello, may I ask whether I can pay in installments? Thanks
- qualifier | Can I pay in installments without interest?
- qualifier | Can I pay in installments on a gift card purchase?
- object | Can I pay with cryptocurrency?

A en | Can I pay in 3 installments?
+ same_number | Can I pay in three installments?
+ paraphrase | Is splitting the payment into 3 parts an option?
+ typo | can I pay in 3 installments
- number | Can I pay in 6 installments?
- number | Can I pay in 12 installments?
- number | Can I pay in four installments?

A en | My card was charged twice. What should I do?
+ paraphrase | I see two identical charges for one order on my card. What do I do?
+ paraphrase | I was billed double for my purchase. How do I fix this?
+ typo | my card was charged twise, what should i do
+ politeness | Hi, sorry to bother you, my card was charged twice. What should I do? Thanks
+ same_number | My card was charged 2 times. What should I do?
- number | My card was charged three times. What should I do?
- object | My card was declined. What should I do?
- topic | Why was my card charged before the item shipped?

A en | Why was my payment declined?
+ paraphrase | My card keeps getting rejected at checkout. Why?
+ paraphrase | What could cause my payment to fail?
+ typo | why was my paymnet declined
- object | Why was my refund denied?
- object | Why was my coupon code rejected?
- qualifier | Why was my payment declined when using PayPal?

A en | How do I apply a coupon code?
+ paraphrase | Where do I enter a promo code at checkout?
+ paraphrase | How can I use a discount code on my order?
+ typo | how do i aply a coupon code
+ politeness | hey, how do I apply a coupon code? thanks!
- object | How do I get a coupon code?
- qualifier | How do I apply a coupon code after I've already paid?
- qualifier | How do I apply a coupon code in the mobile app?
- object | How do I apply a gift card?
- negation | Why can't I apply a coupon code?

A en | Can I use two coupons on one order?
+ same_number | Can I use 2 coupons on one order?
+ paraphrase | Can I combine two coupon codes in a single order?
+ same_number | Can I use two coupons on 1 order?
- number | Can I use three coupons on one order?
- object | Can I use a coupon and a gift card on one order?
- qualifier | Can I use two coupons on one order during the sale?

A en | Does the 20% off coupon work on sale items?
+ same_number | Does the twenty percent off coupon work on sale items?
+ same_number | Does the 20 percent off coupon apply to sale items?
+ paraphrase | Can I use the 20%-off code on items that are already discounted?
- number | Does the 25% off coupon work on sale items?
- number | Does the 10% off coupon work on sale items?
- negation | Why doesn't the 20% off coupon work on sale items?
- object | Does the 20% off coupon work on gift cards?

A en | My coupon code isn't working.
+ paraphrase | The promo code I entered keeps getting rejected.
+ paraphrase | The discount code won't apply at checkout.
+ typo | my coupon code isnt working
+ politeness | Hi, my coupon code isn't working, can you help? Thanks
- object | My gift card isn't working.
- object | My password isn't working.
- qualifier | My coupon code isn't working on sale items.

A en | How do I reset my password?
+ paraphrase | I forgot my password. How can I set a new one?
+ paraphrase | What's the process for replacing a forgotten password?
+ typo | How do I reset my pasword?
+ politeness | Hello, how do I reset my password please?
- object | How do I change my email address?
- object | How do I recover my username?
- qualifier | How do I reset my password without access to my email?
- topic | Why didn't I get the password reset email?

A en | How do I change the email on my account?
+ paraphrase | How can I update the email address linked to my account?
+ paraphrase | I want to use a different email for my account. How?
+ typo | how do i change the emial on my account
- object | How do I change the password on my account?
- object | How do I change the phone number on my account?
- topic | How do I delete my account?

A en | How do I delete my account?
+ paraphrase | I want to close my account permanently. How do I do that?
+ paraphrase | What's the process to remove my profile for good?
+ typo | how do I delte my acount
- antonym | How do I create an account?
- object | How do I delete my order history?
- qualifier | How do I delete my account without losing my points?
- object | How do I deactivate my account temporarily?

A en | How do I subscribe to your newsletter?
+ paraphrase | How can I sign up for your marketing emails?
+ paraphrase | I want to get your email newsletter. How do I join?
+ typo | how do i subcribe to your newsletter
+ politeness | hi, how do I subscribe to your newsletter? thanks
- antonym | How do I unsubscribe from your newsletter?
- antonym | How do I stop getting your newsletter?
- object | How do I subscribe to text alerts?
- qualifier | How do I subscribe to your newsletter in Spanish?

A en | How do I cancel my subscription?
+ paraphrase | How do I end my membership plan?
+ paraphrase | What do I do to stop being billed for the subscription?
+ typo | how do i cancle my subscription
- antonym | How do I renew my subscription?
- antonym | How do I restart my subscription?
- object | How do I pause my subscription?
- qualifier | How do I cancel my subscription before the free trial ends?

A en | Can I upgrade my plan?
+ paraphrase | Is it possible to move to a higher tier?
+ paraphrase | Can I switch to a bigger plan?
+ typo | can i upgrde my plan
- antonym | Can I downgrade my plan?
- antonym | Can I switch to a smaller plan?
- qualifier | Can I upgrade my plan in the middle of the billing cycle?
- object | Can I transfer my plan to someone else?

A en | How do I add a phone line to my plan?
+ paraphrase | How can I put another line on my account?
+ typo | how do I add a phoneline to my plan
+ politeness | Hi, how do I add a phone line to my plan? Thank you.
- antonym | How do I remove a phone line from my plan?
- object | How do I add international roaming to my plan?
- topic | How much does an extra line cost?

A en | How do I increase my data limit?
+ paraphrase | How can I get more data on my plan?
+ paraphrase | I keep running out of data. How do I raise my cap?
+ typo | how do i increse my data limit
- antonym | How do I decrease my data limit?
- antonym | How do I lower my data cap?
- object | How do I increase my spending limit?
- topic | How do I check how much data I have left?

A en | Does the 10GB plan include hotspot?
+ same_number | Does the 10 GB plan include hotspot?
+ paraphrase | Can I use tethering on the 10GB plan?
+ same_number | Does the ten gig plan include hotspot?
- number | Does the 20GB plan include hotspot?
- number | Does the 100GB plan include hotspot?
- object | Does the 10GB plan include international calls?
- negation | Why doesn't the 10GB plan include hotspot?

A en | How do I enable two-factor authentication?
+ paraphrase | How can I turn on 2FA for my account?
+ paraphrase | Where do I switch on two-step verification?
+ typo | how do i enable two factor authentification
- antonym | How do I disable two-factor authentication?
- antonym | How do I turn off 2FA?
- object | How do I enable push notifications?
- qualifier | How do I enable two-factor authentication without a phone?

A en | How do I turn off order notifications?
+ paraphrase | How can I stop getting order update messages?
+ paraphrase | I don't want order alerts anymore. How do I disable them?
+ typo | how do I turn of order notifications
- antonym | How do I turn on order notifications?
- object | How do I turn off marketing emails?
- qualifier | How do I turn off order notifications on my phone only?

A en | Is this jacket available in size M?
+ paraphrase | Do you have this jacket in a medium?
+ paraphrase | Is there a medium left of this jacket?
+ typo | is this jacket availble in size m
- object | Is this jacket available in size L?
- object | Is this jacket available in navy?
- negation | Why is this jacket not available in size M?
- object | Is this sweater available in size M?

A en | Does this shirt run small?
+ paraphrase | Is the sizing on this shirt on the tight side?
+ paraphrase | Does this shirt fit smaller than normal?
+ typo | does this shrit run small
- antonym | Does this shirt run large?
- object | Does this shirt shrink in the wash?
- object | Do these jeans run small?

A en | Can I exchange for a different size?
+ paraphrase | Is it possible to swap my item for another size?
+ paraphrase | The size is wrong. Can I trade it for the right one?
+ typo | can i exchange for a diffrent size
+ politeness | hi, can I exchange for a different size? thank you
- object | Can I exchange for a different color?
- object | Can I exchange for a different item?
- qualifier | Can I exchange for a different size in store?
- negation | Why can't I exchange for a different size?

A en | Is this sweater 100% wool?
+ same_number | Is this sweater one hundred percent wool?
+ paraphrase | Is this sweater made entirely of wool?
+ typo | is this sweater 100 % wool
- object | Is this sweater 100% cotton?
- object | Is this sweater 100% cashmere?
- number | Is this sweater 80% wool?
- topic | Can this sweater be machine washed?

A en | Can I machine wash this dress?
+ paraphrase | Is this dress safe to put in the washing machine?
+ paraphrase | Can this dress go in the washer?
+ typo | can i machine wash this dres
- object | Can I tumble dry this dress?
- object | Can I iron this dress?
- object | Can I machine wash this coat?

A en | Is the iPhone 15 in stock?
+ paraphrase | Do you have the iPhone 15 available right now?
+ typo | is the iphone 15 in stock
+ politeness | Hi, is the iPhone 15 in stock? Thanks!
- number | Is the iPhone 14 in stock?
- qualifier | Is the iPhone 15 Pro in stock?
- negation | Why is the iPhone 15 out of stock?
- qualifier | Is the iPhone 15 in stock at the downtown store?
- topic | When will the iPhone 15 be restocked?

A en | When will this item be back in stock?
+ paraphrase | When are you restocking this product?
+ paraphrase | Any idea when this will be available again?
+ typo | when will this item be back in stok
- qualifier | When will this item be back in stock in size 8?
- topic | Can I preorder this item?
- object | When will this item go on sale?

A en | Does this laptop come with a charger?
+ paraphrase | Is a power adapter included with this laptop?
+ paraphrase | Will I find a charger in the box with this laptop?
+ typo | does this laptop come with a chargr
- object | Does this laptop come with a mouse?
- object | Does this phone come with a charger?
- object | Does this laptop come with Windows installed?
- negation | Why doesn't this laptop come with a charger?

A en | What is the warranty on this TV?
+ paraphrase | What kind of warranty does this television have?
+ paraphrase | What warranty coverage comes with this TV?
+ typo | whats the waranty on this tv
- object | What is the warranty on this soundbar?
- qualifier | What is the extended warranty on this TV?
- qualifier | What is the warranty on this TV if I buy it refurbished?
- object | What is the return policy on this TV?

A en | Is the warranty 2 years?
+ same_number | Is the warranty two years?
+ same_number | Is the warranty 24 months?
+ paraphrase | Does the guarantee last 2 years?
- number | Is the warranty 1 year?
- number | Is the warranty 3 years?
- number | Is the warranty 12 months?

A en | How do I make a warranty claim?
+ paraphrase | What's the process to file a warranty request?
+ paraphrase | My product broke. How do I use the warranty?
+ typo | how do i make a warrenty claim
- object | How do I file a claim for a package damaged in shipping?
- qualifier | How do I make a warranty claim without a receipt?
- topic | How long does a warranty claim take?

A en | What time does your store open on Saturday?
+ paraphrase | When do you open on Saturdays?
+ paraphrase | On Saturday, what time do you unlock the doors?
+ typo | what time does your store open on saturday
+ reorder | On Saturday, what time does your store open?
- antonym | What time does your store close on Saturday?
- object | What time does your store open on Sunday?
- qualifier | What time does your store open on Saturday during the holidays?

A en | Are you open on Christmas Day?
+ paraphrase | Is the store open on December 25?
+ same_number | Are you open on 12/25?
+ typo | are u open on christmas day
- object | Are you open on Christmas Eve?
- object | Are you open on New Year's Day?
- number | Are you open on December 26?

A en | Do you ship internationally?
+ paraphrase | Do you send orders to other countries?
+ paraphrase | Can I get something delivered abroad?
+ typo | do you ship internationaly
+ politeness | hello! do you ship internationally? thanks
- qualifier | Do you ship internationally for free?
- object | Do you ship to P.O. boxes?
- topic | How much is international shipping?

A en | Do you ship to Canada?
+ paraphrase | Can I get an order delivered to Canada?
+ typo | do you ship to canda
+ politeness | Hi there, do you ship to Canada?
- object | Do you ship to Mexico?
- object | Do you ship to Australia?
- qualifier | Do you ship furniture to Canada?
- topic | How long does shipping to Canada take?

A en | Will I have to pay customs fees?
+ paraphrase | Do I need to pay import duties on my order?
+ paraphrase | Will there be extra customs charges?
+ typo | will i have to pay custom fees
- qualifier | Will I have to pay customs fees if I order from the UK?
- object | Will I have to pay sales tax?
- negation | Why did I have to pay customs fees?

A en | Can I get an invoice for my order?
+ paraphrase | Could you send me a bill for my purchase?
+ paraphrase | I need an invoice for what I bought. How do I get one?
+ typo | can i get an invocie for my order
+ politeness | Hi, can I get an invoice for my order please? thanks
- qualifier | Can I get a VAT invoice for my order?
- object | Can I get a receipt for my return?
- qualifier | Can I get an invoice for an order from last year?
- object | Can I get a packing slip for my order?

A en | Can you add my company's tax ID to the invoice?
+ paraphrase | Is it possible to put our business tax number on the invoice?
+ typo | can you add my companys tax id to the invoice
- antonym | Can you remove my company's tax ID from the invoice?
- object | Can you add my company's address to the invoice?
- topic | Can you resend the invoice?

A en | How do I check my gift card balance?
+ paraphrase | Where can I see how much is left on my gift card?
+ paraphrase | How can I find out how much money remains on a gift card?
+ typo | how do i chek my giftcard balance
- object | How do I check my loyalty points balance?
- object | How do I check my store credit balance?
- topic | How do I use my gift card online?

A en | Do gift cards expire?
+ paraphrase | Is there an expiration date on gift cards?
+ paraphrase | Do your gift cards ever run out or become invalid over time?
+ typo | do giftcards expire
- object | Do loyalty points expire?
- object | Do coupons expire?
- qualifier | Do promotional gift cards expire?

A en | Can I buy a $100 gift card?
+ same_number | Can I buy a 100 dollar gift card?
+ same_number | Can I buy a one hundred dollar gift card?
+ same_number | Can I buy a $100.00 gift card?
- number | Can I buy a $150 gift card?
- number | Can I buy a $1,000 gift card?
- number | Can I buy a $10 gift card?
- qualifier | Can I buy a $100 digital gift card?

A en | How many points do I earn per dollar?
+ paraphrase | What's the points earning rate for each dollar spent?
+ paraphrase | For every $1 I spend, how many rewards do I get?
+ typo | how many points do i earn per doller
- qualifier | How many points do I earn per dollar as a Gold member?
- topic | How do I redeem my points?
- object | How many points do I need for a free item?

A en | Is 500 points worth $5?
+ same_number | Is five hundred points worth five dollars?
+ same_number | Are 500 pts worth 5 dollars?
+ same_number | Is 500 points worth $5.00?
- number | Is 500 points worth $50?
- number | Is 5000 points worth $5?
- number | Is 50 points worth $5?

A en | How do I redeem my reward points?
+ paraphrase | How can I use my points toward a purchase?
+ paraphrase | What's the way to cash in my loyalty points?
+ typo | how do i redeem my reward pionts
- object | How do I earn reward points?
- object | How do I transfer my reward points?
- qualifier | How do I redeem my reward points in store?

A en | Can I return an opened item?
+ paraphrase | If I've already opened the package, can I still send it back?
+ typo | can I retun an opend item
+ politeness | Hi! Can I return an opened item? Thanks
- negation | Can I return an unopened item?
- qualifier | Can I return an opened item if it's defective?
- object | Can I exchange an opened item?
- qualifier | Can I return an opened item after 30 days?

A en | Do I have to pay for return shipping?
+ paraphrase | Is return postage on me?
+ paraphrase | Who covers the cost of sending an item back?
+ typo | do i have to pay for retrun shiping
- qualifier | Do I have to pay for return shipping if the item is damaged?
- qualifier | Do I have to pay for return shipping on international orders?
- object | Do I have to pay for shipping on an exchange?
- topic | How do I print a return label?

A en | The item I received is damaged.
+ paraphrase | My order arrived broken.
+ paraphrase | What came in the mail was damaged.
+ typo | the item i recieved is damaged
- object | The item I received is the wrong color.
- object | The item I received is the wrong size.
- qualifier | The item I received is damaged and I need a replacement by Friday.

A en | I haven't received my package yet.
+ paraphrase | My package still hasn't arrived.
+ paraphrase | My parcel hasn't shown up so far.
+ typo | i havent recieved my package yet
- negation | I've received my package, but tracking still says it's in transit.
- qualifier | I haven't received my package yet, but tracking says delivered.
- object | I haven't received my refund yet.
- object | I haven't received my order confirmation email yet.

A en | Can I pick up my order in store?
+ paraphrase | Do you offer in-store pickup?
+ paraphrase | Instead of shipping, can I collect my order at the shop?
+ typo | can i pick up my order in-store
- qualifier | Can I pick up my order in store on the same day?
- object | Can I return my order in store?
- qualifier | Can someone else pick up my order in store?

A en | Do you price match?
+ paraphrase | Will you match a competitor's price?
+ paraphrase | If another store has it cheaper, will you lower your price to match?
+ typo | do u price match
- qualifier | Do you price match Amazon?
- qualifier | Do you price match after purchase?
- negation | Why don't you price match?

A en | Will the price drop on Black Friday?
+ paraphrase | Is this going to be cheaper on Black Friday?
+ typo | will the price drop on black friday
- antonym | Will the price go up on Black Friday?
- object | Will the price drop on Cyber Monday?
- qualifier | Will the price drop on Black Friday for members only?

A en | Did the price of this item increase?
+ paraphrase | Has this product gotten more expensive?
+ paraphrase | Did you raise the price on this item?
- antonym | Did the price of this item decrease?
- antonym | Has this product gotten cheaper?
- object | Did the shipping cost for this item increase?

A en | How do I add an item to my wishlist?
+ paraphrase | How can I save a product to my wish list?
+ typo | how do i add an item to my whishlist
- antonym | How do I remove an item from my wishlist?
- object | How do I add an item to my cart?
- object | How do I share my wishlist?

A en | How do I remove an item from my cart?
+ paraphrase | How can I take something out of my shopping cart?
+ paraphrase | How do I delete a product from the cart?
+ typo | how do i remove an itme from my cart
- antonym | How do I add an item to my cart?
- object | How do I remove an item from my order?
- qualifier | How do I remove an item from my cart in the app?
- topic | Why did an item disappear from my cart?

A en | How do I link my credit card to my account?
+ paraphrase | How can I save a credit card on my account?
+ typo | how do i link my creditcard to my account
- antonym | How do I unlink my credit card from my account?
- antonym | How do I remove a saved card from my account?
- object | How do I link my PayPal to my account?

A en | Can I book a hotel room for 2 adults and 1 child?
+ same_number | Can I book a hotel room for two adults and one child?
+ paraphrase | Can I reserve a hotel room for two grown-ups and one kid?
+ same_number | Can I book a hotel room for 2 adults and one child?
- number | Can I book a hotel room for 2 adults and 2 children?
- number | Can I book a hotel room for 3 adults and 1 child?
- object | Can I book a suite for 2 adults and 1 child?
- qualifier | Can I book a hotel room for 2 adults and 1 child with breakfast included?

A en | Can I cancel my flight booking for free within 24 hours?
+ same_number | Can I cancel my flight booking for free within twenty-four hours?
+ same_number | Can I cancel my flight booking for free within 1 day?
+ typo | can i cancel my flight booking for free within 24hrs
- number | Can I cancel my flight booking for free within 48 hours?
- object | Can I change my flight booking for free within 24 hours?
- qualifier | Can I cancel my flight booking for free within 24 hours of departure?

A en | Can I change the date of my hotel reservation?
+ paraphrase | Is it possible to move my hotel booking to different days?
+ typo | can i change the date of my hotel reservaton
+ reorder | My hotel reservation: can I change the date?
- object | Can I change the name on my hotel reservation?
- object | Can I change the date of my flight?
- qualifier | Can I change the date of my non-refundable hotel reservation?

A en | Is breakfast included in the room rate?
+ paraphrase | Does the room price come with breakfast?
+ typo | is breakfast inclued in the room rate
- object | Is parking included in the room rate?
- object | Is Wi-Fi included in the room rate?
- negation | Why isn't breakfast included in the room rate?

A en | Is this milk lactose-free?
+ typo | is this milk lactose free
+ politeness | Hi, is this milk lactose-free? Thanks
- object | Is this milk organic?
- object | Is this cheese lactose-free?
- object | Is this milk gluten-free?

A en | Do you deliver groceries on Sunday?
+ paraphrase | Is grocery delivery available on Sundays?
+ typo | do you deliver grocerys on sundays
- object | Do you deliver groceries on Saturday?
- qualifier | Do you deliver groceries on Sunday morning?
- object | Do you deliver alcohol on Sunday?

A en | What's the minimum order for grocery delivery?
+ paraphrase | How much do I need to spend to get groceries delivered?
+ typo | whats the minimun order for grocery delivery
- object | What's the delivery fee for groceries?
- qualifier | What's the minimum order for free grocery delivery?
- object | What's the minimum order for in-store pickup?

A en | Is the minimum order $35?
+ same_number | Is the minimum order 35 dollars?
+ same_number | Is the minimum order thirty-five dollars?
+ same_number | Is the minimum order $35.00?
- number | Is the minimum order $25?
- number | Is the minimum order $53?
- number | Is the minimum order $350?

A en | Is there a limit on how many I can buy?
+ paraphrase | Is there a maximum quantity per customer?
+ paraphrase | How many of these am I allowed to purchase?
- qualifier | Is there a limit on how many I can buy during the sale?
- object | Is there a limit on how many coupons I can use?

A en | Can I buy 10 of these at once?
+ same_number | Can I buy ten of these at once?
+ same_number | Can I buy １０ of these at once?
+ paraphrase | Is it OK to order 10 units in one go?
- number | Can I buy 100 of these at once?
- number | Can I buy 20 of these at once?
- number | Can I buy 1 of these at once?

A en | How do I change my delivery time slot?
+ paraphrase | Can I pick a different delivery window?
+ typo | how do i change my delivery timeslot
- object | How do I change my delivery address?
- antonym | How do I cancel my delivery time slot?
- qualifier | How do I change my delivery time slot after the order is packed?

A en | Can I place an order by phone?
+ paraphrase | Is it possible to order over the phone?
+ typo | can i place an order by phone
+ paraphrase | Can I call you to buy something instead of using the website?
- object | Can I place an order by email?
- object | Can I cancel an order by phone?
- topic | What's your phone number?

A en | What's your customer service phone number?
+ paraphrase | What number do I dial to reach customer support?
+ paraphrase | How can I call your support team?
+ typo | whats your customer servce phone number
- object | What's your customer service email?
- qualifier | What's your customer service phone number in the UK?
- topic | What are your customer service hours?

A en | Is customer support available 24/7?
+ paraphrase | Can I reach support at any hour of the day or night?
+ same_number | Is customer support available 24 hours a day, 7 days a week?
- object | Is phone support available 24/7?
- negation | Why isn't customer support available 24/7?
- topic | Is customer support available in Spanish?

A en | Can I get a discount as a student?
+ paraphrase | Do you have a student discount?
+ paraphrase | Are there special prices for students?
+ typo | can i get a discount as a studnet
- object | Can I get a discount as a teacher?
- object | Can I get a discount as a veteran?
- qualifier | Can I get a student discount on sale items?

A en | Is this offer valid until November 30?
+ same_number | Is this offer valid until Nov 30?
+ same_number | Is this offer valid until 11/30?
+ same_number | Is this offer valid until the 30th of November?
- number | Is this offer valid until November 13?
- number | Is this offer valid until December 30?
- number | Is this offer valid until November 3?

A en | Is the Black Friday sale 40% off?
+ same_number | Is the Black Friday sale forty percent off?
+ same_number | Is the Black Friday sale 40 percent off?
- number | Is the Black Friday sale 50% off?
- number | Is the Black Friday sale 4% off?
- object | Is the Cyber Monday sale 40% off?

A en | Does this TV support 4K?
+ paraphrase | Can this television display Ultra HD?
+ typo | does this tv suport 4k
- number | Does this TV support 8K?
- object | Does this TV support HDR?
- negation | Why doesn't this TV support 4K?
- object | Does this monitor support 4K?

A en | Is this phone unlocked?
+ paraphrase | Can I use this phone with any carrier?
+ typo | is this phone unlockd
- negation | Is this phone locked to a carrier?
- object | Is this phone refurbished?
- object | Is this tablet unlocked?

A en | How many GB of storage does this phone have?
+ paraphrase | What's the storage capacity of this phone?
+ paraphrase | How many gigs of space does this phone come with?
- object | How many GB of RAM does this phone have?
- object | How many GB of storage does this tablet have?

A en | Is the 256GB model $799?
+ same_number | Is the 256 GB model 799 dollars?
+ same_number | Is the 256GB model $799.00?
+ paraphrase | Does the 256GB version cost $799?
- number | Is the 256GB model $899?
- number | Is the 128GB model $799?
- number | Is the 512GB model $799?

A en | Has order 778899 shipped?
+ paraphrase | Did order 778899 go out yet?
+ typo | has order #778899 shipped
+ same_number | Has order ７７８８９９ shipped?
- number | Has order 778898 shipped?
- number | Has order 788899 shipped?
- object | Has order 778899 been refunded?
- negation | Why hasn't order 778899 shipped?

A en | Can I return items bought online in store?
+ paraphrase | Can I bring an online purchase back to a physical store?
+ typo | can i return items bought online in-store
- object | Can I return items bought in store by mail?
- object | Can I exchange items bought online in store?

A en | How do I activate my gift card?
+ paraphrase | What do I need to do to start using a new gift card?
+ typo | how do i activate my gift crad
- antonym | How do I deactivate my gift card?
- object | How do I activate my warranty?

A en | How do I opt in to SMS offers?
+ paraphrase | How can I start getting promotional texts?
+ typo | how do I opt-in to sms offers
- antonym | How do I opt out of SMS offers?
- antonym | How can I stop getting promotional texts?
- object | How do I opt in to email offers?

A en | Can I merge two orders into one shipment?
+ paraphrase | Can you combine my two orders and ship them together?
+ same_number | Can I merge 2 orders into one shipment?
- antonym | Can I split one order into two shipments?
- number | Can I merge three orders into one shipment?

A en | Can I upgrade to express shipping after ordering?
+ paraphrase | Is it possible to switch to faster delivery once I've already placed the order?
+ typo | can i upgrade to expres shipping after ordering
- antonym | Can I downgrade to standard shipping after ordering?
- qualifier | Can I upgrade to express shipping after my order ships?

A en | Can I extend my warranty?
+ paraphrase | Is it possible to buy additional warranty coverage?
+ typo | can i extend my warrenty
- object | Can I extend my return period?
- object | Can I transfer my warranty?
- qualifier | Can I extend my warranty after it expires?

A en | Does this come with free assembly?
+ paraphrase | Is assembly included at no extra charge?
+ politeness | Hi, does this come with free assembly? Thanks!
- qualifier | Does this come with free assembly in rural areas?
- object | Does this come with free installation?
- negation | Why doesn't this come with free assembly?

A en | Can I get the sofa delivered on March 3?
+ same_number | Can I get the sofa delivered on 3/3?
+ same_number | Can I get the sofa delivered on the third of March?
- number | Can I get the sofa delivered on March 13?
- number | Can I get the sofa delivered on May 3?
- object | Can I get the table delivered on March 3?

A en | Do you have gluten-free bread?
+ paraphrase | Do you sell any bread without gluten?
+ typo | do you have gluten free bread
- object | Do you have gluten-free pasta?
- negation | Why don't you have gluten-free bread?
- object | Do you have sugar-free bread?

A en | Is the promo code case-sensitive?
+ paraphrase | Does it matter if I type the discount code in upper or lower case?
+ typo | is the promo code case sensitive
- object | Is the password case-sensitive?
- topic | Does the promo code expire?

A en | Can I return a gift without the buyer knowing?
+ paraphrase | If I return a present, will the person who gave it find out?
+ typo | can i return a gift without the buyer knowing
- qualifier | Can I return a gift without a gift receipt?
- object | Can I exchange a gift without the buyer knowing?

A en | How do I return an item?
+ paraphrase | What steps do I follow to send something back?
+ paraphrase | I'd like to send back something I bought. How does that work?
+ politeness | Hello there, how do I return an item? Many thanks.
+ typo | HOW DO I RETURN AN ITEM
- qualifier | How do I return an item I bought in store?
- qualifier | How do I return an item from a marketplace seller?
- object | How do I exchange an item?
- topic | How much does it cost to return an item?

A en | Can I get a refund instead of store credit?
+ paraphrase | I'd rather have my money back than a credit. Is that possible?
+ typo | can i get a refund instead of store-credit
- antonym | Can I get store credit instead of a refund?
- object | Can I get a replacement instead of store credit?

A en | Why was my order cancelled?
+ paraphrase | What's the reason my order got canceled?
+ typo | why was my order canceled
- object | Why was my order delayed?
- object | Why was my account suspended?
- negation | Why wasn't my order cancelled?

A en | Can I return shoes I've worn outside?
+ paraphrase | If I've already walked around outdoors in the shoes, will you still take them back?
+ reorder | Shoes I've worn outside: can I return them?
+ typo | can i return shoes ive worn outside
- negation | Can I return shoes I haven't worn outside?
- object | Can I exchange shoes I've worn outside?
- qualifier | Can I return shoes I've worn outside if they fell apart?

A en | How long is the battery life on these earbuds?
+ paraphrase | How many hours do these earbuds last on a single charge?
+ reorder | These earbuds: how long does the battery last?
+ typo | how long is the battery life on these earbud
- qualifier | How long is the battery life on these earbuds with noise cancelling on?
- object | How long does it take to charge these earbuds?
- object | How long is the battery life on this smartwatch?

A en | Is the blue one cheaper than the black one?
+ reorder | Is the black one more expensive than the blue one?
+ paraphrase | Does the blue version cost less than the black version?
- antonym | Is the blue one more expensive than the black one?
- object | Is the blue one lighter than the black one?

A en | Do you have this in stock at the Oak Street store?
+ reorder | At the Oak Street store, do you have this in stock?
+ paraphrase | Is this available at your Oak Street location right now?
- object | Do you have this in stock at the Elm Street store?
- negation | Why is this out of stock at the Oak Street store?
- object | Do you have this in stock online?

A en | Can I add a second checked bag to my flight?
+ paraphrase | Is it possible to bring one more suitcase in the hold on my booking?
+ same_number | Can I add a 2nd checked bag to my flight?
- antonym | Can I remove a checked bag from my flight?
- number | Can I add a third checked bag to my flight?
- object | Can I add a carry-on bag to my flight?

A en | Does this prepaid plan include unlimited texts?
+ paraphrase | Can I send as many text messages as I want on this prepaid plan?
+ typo | does this pre-paid plan include unlimited texts
- object | Does this prepaid plan include unlimited calls?
- qualifier | Does this prepaid plan include unlimited international texts?
- object | Does this postpaid plan include unlimited texts?

A en | I'd like to return the blender I bought last week.
+ reorder | The blender I bought last week, I'd like to return it.
+ politeness | Hello, I'd like to return the blender I bought last week, please.
+ paraphrase | I want to send back the blender I purchased a week ago.
- object | I'd like to exchange the blender I bought last week.
- object | I'd like to return the toaster I bought last week.
- qualifier | I'd like to return the blender I bought last year.

A en | How much does it cost to ship a 5 kg package?
+ same_number | How much does it cost to ship a five kilogram package?
+ same_number | How much does it cost to ship a 5000 g package?
+ paraphrase | What's the postage for a parcel that weighs 5 kg?
- number | How much does it cost to ship a 15 kg package?
- number | How much does it cost to ship a 5 lb package?
- qualifier | How much does it cost to ship a 5 kg package overnight?

A en | Is the sale price valid in stores and online?
+ reorder | Is the sale price valid online and in stores?
+ paraphrase | Can I get the discounted price both on the website and at a physical shop?
- qualifier | Is the sale price valid in stores only?
- object | Is the coupon valid in stores and online?

A en | Will my package be delivered by Friday?
+ paraphrase | Can I expect my parcel to arrive by Friday?
+ reorder | By Friday, will my package be delivered?
+ typo | will my pakage be delivered by friday
- object | Will my package be delivered by Monday?
- qualifier | Will my package be delivered by Friday if I upgrade to express?
- negation | Why won't my package be delivered by Friday?

A en | Can I use my points and a coupon together?
+ reorder | Can I use a coupon and my points together?
+ paraphrase | Is it possible to combine reward points with a promo code?
- object | Can I use my points and a gift card together?
- negation | Why can't I use my points and a coupon together?

A en | Is the charger included or sold separately?
+ reorder | Is the charger sold separately or included?
+ paraphrase | Do I have to buy the charger on its own, or does it come in the box?
- object | Is the case included or sold separately?
- topic | How much does the charger cost?

A en | Do you have a size chart for kids' shoes?
+ paraphrase | Where can I find sizing info for children's footwear?
+ typo | do you have a size chart for kids shoes
- object | Do you have a size chart for women's shoes?
- object | Do you have a size chart for kids' jackets?
"""

SEEDS_ZH = r"""
# Chinese seeds, same format as seeds_en.txt.

A zh | 亲，多久能发货？
+ paraphrase | 下单以后一般几天发出？
+ paraphrase | 一般什么时候给发货呀
+ politeness | 多久能发货？
+ typo | 亲 多久能发或
+ paraphrase | 拍下后多长时间安排发货？
- object | 亲，多久能到货？
- qualifier | 亲，预售款多久能发货？
- qualifier | 亲，定制款多久能发货？
- topic | 亲，发什么快递？

A zh | 发什么快递？
+ paraphrase | 你们用的是哪家物流？
+ paraphrase | 默认走哪个快递公司
+ politeness | 请问一下发什么快递呀
+ typo | 发什么快第？
+ reorder | 快递发的是哪家？
- qualifier | 偏远地区发什么快递？
- topic | 可以指定顺丰吗？
- topic | 快递几天能到？

A zh | 包邮吗？
+ a_not_a | 是不是包邮？
+ a_not_a | 包不包邮？
+ politeness | 亲，请问包邮吗
+ paraphrase | 免运费吗？
+ typo | 包油吗
- negation | 是不包邮？
- qualifier | 新疆包邮吗？
- object | 退货包邮吗？
- qualifier | 买两件包邮吗？

A zh | 运费多少？
+ paraphrase | 邮费是多少钱
+ paraphrase | 快递费要多少
+ politeness | 亲 运费多少呀
+ typo | 运费多少?
- qualifier | 偏远地区运费多少？
- qualifier | 寄到香港运费多少？
- object | 退货运费多少？
- qualifier | 加急运费多少？

A zh | 满99包邮吗？
+ same_number | 满九十九包邮吗？
+ same_number | 满９９包邮吗？
+ paraphrase | 买够99块是不是就免运费了
+ a_not_a | 满99是不是包邮？
- number | 满69包邮吗？
- number | 满199包邮吗？
- number | 满9.9包邮吗？
- negation | 满99也不包邮吗？

A zh | 支持七天无理由退货吗？
+ a_not_a | 支不支持七天无理由退货？
+ same_number | 支持7天无理由退货吗
+ politeness | 亲，请问支持七天无理由退货吗？谢谢
+ typo | 支持七天无理由退或吗
+ paraphrase | 不喜欢的话，收货一周内能无理由退吗？
- negation | 为什么不支持七天无理由退货？
- number | 支持十五天无理由退货吗？
- qualifier | 内衣支持七天无理由退货吗？
- qualifier | 拆封了还支持七天无理由退货吗？
- object | 支持七天无理由换货吗？

A zh | 衣服洗过了还能退吗？
+ a_not_a | 衣服洗过了还能不能退？
+ paraphrase | 已经下过水的衣服可以退货吗
+ typo | 衣服洗过了还能腿吗
- negation | 衣服没洗过能退吗？
- object | 衣服洗过了还能换吗？
- object | 鞋子穿过了还能退吗？
- qualifier | 衣服洗过了但吊牌还在，能退吗？

A zh | 退款多久到账？
+ paraphrase | 钱多长时间能退回来？
+ paraphrase | 退的钱几天能到
+ politeness | 亲，麻烦问下退款多久到账
+ typo | 退款多久到帐？
- qualifier | 退款退到信用卡多久到账？
- object | 换货多久能收到？
- topic | 退款怎么申请？
- qualifier | 部分退款多久到账？

A zh | 我的快递到哪了？
+ paraphrase | 帮我查一下物流
+ paraphrase | 我的包裹现在在哪里
+ politeness | 亲，麻烦帮我看看快递到哪了，谢谢
+ typo | 我的快地到哪了
- object | 我的退款到哪了？
- object | 我的发票到哪了？
- topic | 快递可以改地址吗？

A zh | 我还没收到货
+ paraphrase | 货到现在都没到
+ paraphrase | 东西一直没收到啊
+ politeness | 亲，我还没收到货呢
+ typo | 我还没收到或
- negation | 我收到货了
- qualifier | 物流显示已签收，但我还没收到货
- object | 我还没收到退款
- object | 我还没收到发票

A zh | 能换尺码吗？
+ a_not_a | 能不能换尺码？
+ paraphrase | 码数不合适可以换一个吗
+ paraphrase | 尺寸买错了，可以调换吗
+ typo | 能换尺码么
- object | 能换颜色吗？
- object | 能换款式吗？
- qualifier | 打折款能换尺码吗？
- negation | 为什么不能换尺码？

A zh | 这款鞋偏大还是偏小？
+ paraphrase | 这双鞋尺码正不正？
+ typo | 这款鞋偏大还是偏小?
+ politeness | 亲，这款鞋偏大还是偏小呀
- object | 这款衣服偏大还是偏小？
- topic | 这款鞋磨脚吗？
- qualifier | 这款鞋宽脚穿偏大还是偏小？

A zh | 身高170体重60公斤穿什么码？
+ same_number | 身高一米七体重120斤穿什么码？
+ same_number | 身高170cm体重60kg穿什么码？
+ reorder | 体重60公斤、身高170，穿哪个码？
+ politeness | 亲，身高170体重60公斤穿什么码呀？
- number | 身高175体重60公斤穿什么码？
- number | 身高170体重70公斤穿什么码？
- number | 身高170体重60斤穿什么码？
- qualifier | 身高170体重60公斤，想穿宽松一点，选什么码？

A zh | 这个有货吗？
+ a_not_a | 这个有没有货？
+ paraphrase | 这款还有库存吗
+ politeness | 亲，这个有货吗
+ typo | 这个有或吗
- negation | 这个没货了吗？
- qualifier | 这个L码有货吗？
- qualifier | 这个黑色有货吗？
- topic | 这个什么时候补货？

A zh | 什么时候补货？
+ paraphrase | 啥时候能再上架
+ paraphrase | 多久会重新有货
+ typo | 什么时侯补货
- qualifier | M码什么时候补货？
- object | 什么时候降价？
- object | 什么时候发货？

A zh | 怎么用优惠券？
+ paraphrase | 优惠券在哪里使用
+ paraphrase | 领了券怎么抵扣
+ typo | 怎么用优惠卷？
+ politeness | 亲，请问优惠券怎么用呀
- object | 怎么领优惠券？
- object | 怎么用红包？
- topic | 退款后优惠券还能用吗？

A zh | 满300减50的券能用吗？
+ same_number | 满三百减五十的券能用吗？
+ same_number | 满３００减５０的券能用吗？
+ a_not_a | 满300减50的券能不能用？
- number | 满300减30的券能用吗？
- number | 满400减50的券能用吗？
- number | 满3000减50的券能用吗？
- number | 满三百减三十的券能用吗？

A zh | 优惠券能叠加使用吗？
+ paraphrase | 几张券可以一起用吗
+ a_not_a | 优惠券能不能叠加使用？
+ typo | 优惠卷能叠加使用吗
- object | 优惠券能和积分一起用吗？
- negation | 优惠券为什么不能叠加使用？
- qualifier | 店铺优惠券和平台优惠券能叠加吗？

A zh | 双十一有活动吗？
+ same_number | 11月11日有活动吗？
+ same_number | 11.11有活动吗？
+ same_number | 双11有活动吗
+ a_not_a | 双十一有没有活动？
- number | 双十二有活动吗？
- number | 618有活动吗？
- number | 11月1日有活动吗？
- qualifier | 双十一这款有活动吗？

A zh | 这件是299元吗？
+ same_number | 这件是二百九十九元吗？
+ same_number | 这件是２９９元吗？
+ same_number | 这件是299块吗？
- number | 这件是399元吗？
- number | 这件是29.9元吗？
- number | 这件是三百元吗？

A zh | 订单满1.5万可以免息分期吗？
+ same_number | 订单满15000可以免息分期吗？
+ same_number | 订单满一万五可以免息分期吗？
+ a_not_a | 订单满1.5万能不能免息分期？
- number | 订单满2万可以免息分期吗？
- number | 订单满1.5千可以免息分期吗？
- number | 订单满5万可以免息分期吗？
- qualifier | 订单满1.5万可以分12期免息吗？

A zh | 可以分期付款吗？
+ a_not_a | 能不能分期付款？
+ paraphrase | 付款能分几个月慢慢还吗
+ typo | 可以分其付款吗
- qualifier | 可以分期付款免利息吗？
- object | 可以货到付款吗？
- negation | 为什么不能分期付款？
- qualifier | 可以分3期付款吗？

A zh | 支持货到付款吗？
+ paraphrase | 能收到货再付钱吗
+ a_not_a | 支不支持货到付款？
+ politeness | 亲 支持货到付款吗
- object | 支持微信支付吗？
- object | 支持信用卡付款吗？
- qualifier | 偏远地区支持货到付款吗？

A zh | 可以用支付宝付款吗？
+ a_not_a | 能不能用支付宝付款？
+ paraphrase | 支付宝能付吗
+ typo | 可以用支付包付款吗
- object | 可以用微信付款吗？
- negation | 为什么不能用支付宝付款？
- object | 可以退款到支付宝吗？

A zh | 怎么开发票？
+ paraphrase | 发票在哪里申请
+ paraphrase | 我要开票，怎么弄
+ politeness | 麻烦问下怎么开发票，谢谢
+ typo | 怎么开发漂
- qualifier | 怎么开增值税专用发票？
- object | 怎么改发票抬头？
- qualifier | 怎么开电子发票？
- topic | 退货后发票怎么处理？

A zh | 可以开公司抬头的发票吗？
+ paraphrase | 发票抬头能写公司名吗
+ a_not_a | 能不能开公司抬头的发票？
- object | 可以开个人抬头的发票吗？
- negation | 为什么不能开公司抬头的发票？
- qualifier | 可以开公司抬头的专票吗？

A zh | 怎么退订短信？
+ paraphrase | 不想再收到营销短信，怎么取消
+ paraphrase | 推广短信怎么关掉
+ typo | 怎么退定短信
- antonym | 怎么订阅短信？
- object | 怎么退订邮件？
- antonym | 怎么开通短信提醒？

A zh | 会员怎么开通？
+ paraphrase | 怎么办会员
+ paraphrase | 我想成为会员，在哪里开
+ typo | 会员怎么开同
- antonym | 会员怎么关闭？
- object | 会员怎么取消自动续费？
- object | 会员怎么升级？

A zh | 怎么关闭自动续费？
+ paraphrase | 不想每个月自动扣钱了，在哪取消
+ paraphrase | 自动续费在哪关
+ typo | 怎么关闭自动续废
- antonym | 怎么开通自动续费？
- object | 怎么关闭免密支付？
- topic | 关闭自动续费后会员还能用到月底吗？

A zh | 怎么绑定银行卡？
+ paraphrase | 银行卡要怎么绑上
+ typo | 怎么帮定银行卡
+ politeness | 你好，请问怎么绑定银行卡？
- antonym | 怎么解绑银行卡？
- object | 怎么绑定手机号？
- object | 怎么绑定信用卡？

A zh | 怎么解绑手机号？
+ paraphrase | 账号上的手机号怎么解除绑定
+ typo | 怎么解帮手机号
- antonym | 怎么绑定手机号？
- object | 怎么更换手机号？
- object | 怎么解绑微信？

A zh | 会员能升级吗？
+ a_not_a | 会员能不能升级？
+ paraphrase | 我想把会员等级往上提，可以吗
- antonym | 会员能降级吗？
- qualifier | 会员能免费升级吗？
- object | 会员能转让吗？

A zh | 手机套餐怎么升级？
+ paraphrase | 我想换个档位更高的套餐，怎么操作
+ typo | 手机套餐怎么生级
- antonym | 手机套餐怎么降级？
- object | 手机套餐怎么取消？
- qualifier | 手机套餐月中能升级吗？

A zh | 流量不够用，怎么加流量？
+ paraphrase | 想多买点流量，在哪里办
+ paraphrase | 流量用完了怎么增加
- antonym | 流量太多用不完，怎么减少？
- object | 通话分钟不够用，怎么加？
- qualifier | 流量不够用，怎么加国际流量？

A zh | 每月30G流量的套餐多少钱？
+ same_number | 每月三十G流量的套餐多少钱？
+ same_number | 每月30GB流量的套餐多少钱？
+ same_number | 每月３０G流量的套餐多少钱？
- number | 每月20G流量的套餐多少钱？
- number | 每月300G流量的套餐多少钱？
- number | 每月30M流量的套餐多少钱？
- qualifier | 每月30G流量的套餐签两年多少钱？

A zh | 这款过几天会涨价吗？
+ paraphrase | 这个过几天会变贵吗
+ a_not_a | 这款过几天会不会涨价？
- antonym | 这款过几天会降价吗？
- antonym | 这个过几天会便宜吗？
- qualifier | 这款双十一后会涨价吗？

A zh | 买完降价了能退差价吗？
+ paraphrase | 刚买就便宜了，差价可以补给我吗
+ a_not_a | 买完降价了能不能退差价？
+ typo | 买完降价了能退差介吗
- antonym | 买完涨价了要补差价吗？
- qualifier | 买完超过7天降价了能退差价吗？
- object | 买完降价了能退货重拍吗？

A zh | 收货地址写错了能改吗？
+ a_not_a | 收货地址写错了能不能改？
+ paraphrase | 地址填错了，可以帮我修改一下吗
+ typo | 收货地只写错了能改吗
- object | 收货人电话写错了能改吗？
- object | 退货地址写错了能改吗？
- qualifier | 已经发货了，收货地址写错了还能改吗？

A zh | 退货地址是什么？
+ paraphrase | 要退的东西寄到哪里
+ paraphrase | 退货寄回哪个地址
+ politeness | 亲，请问退货地址是什么呀
- object | 收货地址在哪里改？
- object | 退货电话是多少？
- qualifier | 大件商品退货地址是什么？

A zh | 怎么取消订单？
+ paraphrase | 订单不想要了，在哪取消
+ paraphrase | 下的单怎么撤销
+ typo | 怎么取消定单
+ politeness | 亲，麻烦问下怎么取消订单
- qualifier | 已发货的订单怎么取消？
- object | 怎么修改订单？
- object | 怎么查订单物流？
- negation | 订单为什么取消不了？

A zh | 订单号123456789什么时候发货？
+ typo | 订单号：123456789 什么时候发货?
+ same_number | 订单号１２３４５６７８９什么时候发货？
+ paraphrase | 帮我看下123456789这个订单啥时候发
- number | 订单号123456798什么时候发货？
- number | 订单号123456780什么时候发货？
- object | 订单号123456789什么时候到货？
- object | 订单号123456789能取消吗？

A zh | 拆封了还能退吗？
+ a_not_a | 拆封了还能不能退？
+ paraphrase | 包装打开了可以退货吗
+ typo | 拆封了还能退么
- negation | 没拆封能退吗？
- object | 拆封了还能换吗？
- qualifier | 拆封了有质量问题能退吗？
- qualifier | 手机拆封了还能退吗？

A zh | 质量有问题怎么办？
+ paraphrase | 收到的东西有质量问题，怎么处理
+ paraphrase | 商品有瑕疵该怎么办
+ politeness | 亲，质量有问题怎么办呀
- object | 发错货了怎么办？
- object | 少发了怎么办？
- qualifier | 质量有问题但过了七天怎么办？
- topic | 质量问题退货运费谁出？

A zh | 退货运费谁承担？
+ paraphrase | 退回去的邮费谁出
+ paraphrase | 寄回运费是我付还是你们付
+ typo | 退货运费谁成担
- qualifier | 质量问题退货运费谁承担？
- qualifier | 七天无理由退货运费谁承担？
- object | 换货运费谁承担？

A zh | 有运费险吗？
+ a_not_a | 有没有运费险？
+ paraphrase | 买了送退货运费险不
+ typo | 有运费线吗
- object | 有保价吗？
- negation | 为什么没有运费险？
- qualifier | 特价商品有运费险吗？

A zh | 保修期多长时间？
+ paraphrase | 保修多久
+ paraphrase | 质保期是多长
+ politeness | 请问保修期多长时间呢
+ typo | 保修期多长时间?
- qualifier | 电池保修期多长时间？
- object | 退货期多长时间？
- qualifier | 延保后保修期多长时间？

A zh | 保修一年吗？
+ same_number | 保修1年吗？
+ same_number | 保修12个月吗？
+ a_not_a | 是不是保修一年？
- number | 保修两年吗？
- number | 保修半年吗？
- number | 保修3年吗？

A zh | 这个手机是全网通吗？
+ a_not_a | 这个手机是不是全网通？
+ paraphrase | 这款手机三大运营商的卡都能用吗
+ typo | 这个手机是全网通么
- object | 这个手机是国行吗？
- object | 这个平板是全网通吗？
- object | 这个手机支持5G吗？

A zh | 这台电脑是16G内存吗？
+ same_number | 这台电脑是16GB内存吗？
+ same_number | 这台电脑是十六G内存吗？
- number | 这台电脑是8G内存吗？
- number | 这台电脑是32G内存吗？
- object | 这台电脑是16G显存吗？

A zh | 耳机可以单独买一只吗？
+ paraphrase | 丢了一只耳机，能只补一个吗
+ a_not_a | 耳机能不能单独买一只？
- object | 耳机可以单独买充电盒吗？
- negation | 耳机为什么不能单独买一只？

A zh | 这件是纯棉的吗？
+ paraphrase | 这件是100%棉的吗
+ a_not_a | 这件是不是纯棉的？
+ typo | 这件是纯绵的吗
- object | 这件是纯羊毛的吗？
- object | 这件是真丝的吗？
- object | 这条裤子是纯棉的吗？

A zh | 这件羊毛衫可以机洗吗？
+ paraphrase | 这件羊毛衫能放洗衣机洗吗
+ a_not_a | 这件羊毛衫能不能机洗？
- object | 这件羊毛衫可以烘干吗？
- object | 这件羊毛衫可以干洗吗？
- object | 这件衬衫可以机洗吗？

A zh | 生鲜可以退吗？
+ a_not_a | 生鲜能不能退？
+ paraphrase | 生鲜商品支持退货吗
- qualifier | 生鲜坏了可以退吗？
- object | 生鲜可以换吗？
- negation | 生鲜为什么不能退？

A zh | 水果坏了怎么赔？
+ paraphrase | 收到的水果烂了，怎么处理
+ paraphrase | 到手的水果有坏的，怎么理赔
+ typo | 水果坏了怎么陪
- qualifier | 水果坏了一半怎么赔？
- object | 鸡蛋碎了怎么赔？
- topic | 水果多久能到？

A zh | 保质期到什么时候？
+ paraphrase | 这个什么时候过期
+ paraphrase | 有效期到哪天
- object | 生产日期是什么时候？
- qualifier | 开封后保质期多久？

A zh | 积分怎么用？
+ paraphrase | 攒的积分怎么使用
+ typo | 积分怎么用?
+ politeness | 亲，积分怎么用呀
- object | 积分怎么获得？
- object | 积分怎么查？
- topic | 积分会过期吗？

A zh | 100积分抵1块钱吗？
+ same_number | 一百积分抵一块钱吗？
+ same_number | 100积分抵1元吗？
+ same_number | １００积分抵１块钱吗？
- number | 100积分抵10块钱吗？
- number | 1000积分抵1块钱吗？
- number | 10积分抵1块钱吗？

A zh | 积分会过期吗？
+ a_not_a | 积分会不会过期？
+ paraphrase | 积分有没有有效期
- object | 优惠券会过期吗？
- object | 礼品卡会过期吗？
- topic | 退货后积分会扣回吗？

A zh | 礼品卡余额怎么查？
+ paraphrase | 怎么看礼品卡里还剩多少钱
+ typo | 礼品卡余额怎么茶
- object | 积分余额怎么查？
- object | 礼品卡怎么用？
- object | 礼品卡怎么充值？

A zh | 礼品卡可以转赠吗？
+ paraphrase | 礼品卡能送给别人用吗
+ a_not_a | 礼品卡能不能转赠？
- object | 礼品卡可以提现吗？
- negation | 礼品卡为什么不能转赠？
- object | 优惠券可以转赠吗？

A zh | 门店几点开门？
+ paraphrase | 店铺早上几点营业
+ paraphrase | 你们店几点开始营业
+ typo | 门店几点开们
- antonym | 门店几点关门？
- qualifier | 门店周末几点开门？
- qualifier | 门店春节期间几点开门？

A zh | 春节期间发货吗？
+ a_not_a | 春节期间发不发货？
+ paraphrase | 过年的时候还能正常发货吗
+ typo | 春节期间发或吗
- object | 春节期间客服上班吗？
- negation | 春节期间为什么不发货？
- qualifier | 春节期间发顺丰吗？

A zh | 客服几点下班？
+ paraphrase | 人工客服工作到几点
+ typo | 客服几点下斑
+ politeness | 亲，客服几点下班呀
- antonym | 客服几点上班？
- qualifier | 客服周末几点下班？

A zh | 能发顺丰吗？
+ a_not_a | 能不能发顺丰？
+ paraphrase | 可以走顺丰快递吗
+ typo | 能发顺风吗
- object | 能发京东快递吗？
- qualifier | 能发顺丰到付吗？
- qualifier | 能免费发顺丰吗？

A zh | 可以送货上门吗？
+ a_not_a | 能不能送货上门？
+ paraphrase | 能直接送到家门口吗
- object | 可以送货上楼吗？
- qualifier | 大件可以送货上门吗？
- object | 可以上门取件吗？

A zh | 订单可以合并发货吗？
+ paraphrase | 我下了两单，能一起发吗
+ a_not_a | 订单能不能合并发货？
- antonym | 订单可以拆开分别发货吗？
- object | 订单可以合并付款吗？

A zh | 酒店可以免费取消吗？
+ a_not_a | 酒店能不能免费取消？
+ paraphrase | 酒店取消是免费的吗
- qualifier | 酒店入住前24小时可以免费取消吗？
- object | 酒店可以免费改期吗？
- object | 机票可以免费取消吗？

A zh | 入住前24小时取消能全额退款吗？
+ same_number | 入住前二十四小时取消能全额退款吗？
+ same_number | 入住前２４小时取消能全额退款吗？
+ a_not_a | 入住前24小时取消能不能全额退款？
- number | 入住前48小时取消能全额退款吗？
- number | 入住前2小时取消能全额退款吗？
- object | 入住前24小时取消能退一半吗？

A zh | 两大一小可以住一间吗？
+ same_number | 2个大人1个小孩可以住一间吗？
+ paraphrase | 两个成人带一个孩子，一间房够住吗
- number | 两大两小可以住一间吗？
- number | 三大一小可以住一间吗？
- object | 两大一小需要加床吗？

A zh | 机票可以改签吗？
+ a_not_a | 机票能不能改签？
+ paraphrase | 航班日期可以改吗
- object | 机票可以退票吗？
- qualifier | 特价机票可以改签吗？
- qualifier | 机票可以免费改签吗？

A zh | 怎么修改登录密码？
+ paraphrase | 登录密码在哪改
+ paraphrase | 我想换个登录密码，怎么操作
+ typo | 怎么修改登陆密码
- object | 怎么修改支付密码？
- qualifier | 忘记原密码怎么修改登录密码？
- object | 怎么修改用户名？

A zh | 账号被盗了怎么办？
+ paraphrase | 我的号被别人登了，怎么处理
+ typo | 帐号被盗了怎么办
- object | 账号被封了怎么办？
- object | 账号忘了怎么办？
- topic | 怎么注销账号？

A zh | 怎么注销账号？
+ paraphrase | 账号不想用了，怎么彻底删除
+ typo | 怎么注消账号
- antonym | 怎么注册账号？
- object | 怎么冻结账号？
- topic | 注销账号后余额怎么办？

A zh | 购物车里的东西怎么删除？
+ paraphrase | 怎么把商品从购物车移除
+ paraphrase | 购物车里的东西怎么删掉
- antonym | 怎么把商品加入购物车？
- object | 订单里的东西怎么删除？
- object | 收藏夹里的东西怎么删除？

A zh | 能便宜点吗？
+ a_not_a | 能不能便宜点？
+ paraphrase | 价格还能优惠一些吗
+ politeness | 亲，能便宜点吗
+ paraphrase | 可以少点吗
- qualifier | 买两件能便宜点吗？
- topic | 有优惠券吗？
- object | 运费能便宜点吗？

A zh | 买两件打几折？
+ same_number | 买2件打几折？
+ same_number | 买２件打几折？
- number | 买三件打几折？
- number | 买二十件打几折？
- object | 买两件送什么？

A zh | 这个打八折吗？
+ same_number | 这个打8折吗？
+ paraphrase | 这个是八折价吗
- number | 这个打七折吗？
- number | 这个打八五折吗？
- number | 这个打九折吗？

A zh | 领的5元无门槛券怎么用不了？
+ same_number | 领的五元无门槛券怎么用不了？
+ paraphrase | 5块钱的无门槛优惠券为什么用不了
- number | 领的50元无门槛券怎么用不了？
- object | 领的5元满减券怎么用不了？
- negation | 领的5元无门槛券怎么用？

A zh | 鞋子有37码吗？
+ same_number | 鞋子有三十七码吗？
+ same_number | 鞋子有３７码吗？
+ a_not_a | 鞋子有没有37码？
- number | 鞋子有38码吗？
- number | 鞋子有36.5码吗？
- negation | 鞋子没有37码了吗？

A zh | 现在下单今天能发货吗？
+ paraphrase | 现在拍的话今天能发出吗
+ a_not_a | 现在下单今天能不能发货？
+ typo | 现在下单今天能发货吗?
- object | 现在下单明天能到吗？
- number | 现在下单明天能发货吗？

A zh | 下午4点前下单当天发货吗？
+ same_number | 下午四点前下单当天发货吗？
+ same_number | 16点前下单当天发货吗？
+ same_number | 16:00前下单当天发货吗？
- number | 下午5点前下单当天发货吗？
- number | 下午3点前下单当天发货吗？
- antonym | 下午4点后下单当天发货吗？

A zh | 价保多少天？
+ paraphrase | 保价期是几天
+ typo | 价保多少天?
- qualifier | 双十一价保多少天？
- object | 退货期多少天？

A zh | 退货需要原包装吗？
+ paraphrase | 退货时一定要用原来的盒子吗
+ a_not_a | 退货需不需要原包装？
- object | 退货需要发票吗？
- object | 换货需要原包装吗？
- negation | 没有原包装能退货吗？

A zh | 可以仅退款不退货吗？
+ paraphrase | 只退钱不退东西行不行
+ paraphrase | 能只退款、东西不寄回吗
- qualifier | 东西坏了可以仅退款不退货吗？
- object | 可以只换货不退款吗？

A zh | 怎么联系人工客服？
+ paraphrase | 怎么转人工
+ paraphrase | 我要找真人客服
+ typo | 怎么联系人工客付
- object | 怎么联系商家？
- object | 怎么投诉客服？
- qualifier | 晚上怎么联系人工客服？

A zh | 我要投诉快递员
+ paraphrase | 送货的快递小哥我要投诉
+ politeness | 你好，我要投诉快递员
- object | 我要投诉客服
- antonym | 我要表扬快递员
- qualifier | 我要投诉快递员没送货上门

A zh | 能加急发货吗？
+ a_not_a | 能不能加急发货？
+ paraphrase | 可以帮我尽快发出吗
- topic | 加急发货要加钱吗？
- object | 能加急退款吗？

A zh | 这件衣服会掉色吗？
+ a_not_a | 这件衣服会不会掉色？
+ paraphrase | 这衣服洗了会褪色吗
+ typo | 这件衣服会调色吗
- object | 这件衣服会缩水吗？
- object | 这件衣服会起球吗？
- object | 这条裤子会掉色吗？

A zh | 是正品吗？
+ a_not_a | 是不是正品？
+ paraphrase | 保真吗
+ politeness | 亲，请问是正品吗
- object | 是新品吗？
- object | 是国行吗？
- qualifier | 是专柜正品吗？

A zh | 能不能退？
+ a_not_a | 可以退吗？
+ politeness | 亲，这个能不能退呀
+ paraphrase | 支持退货吗
- negation | 不能退吗？
- object | 能不能换？
- qualifier | 用过了能不能退？

A zh | 发货后可以改地址吗？
+ a_not_a | 发货后能不能改地址？
+ paraphrase | 已经发出去了，收件地址还能换吗
+ reorder | 可以改地址吗，已经发货了
- qualifier | 发货前可以改地址吗？
- object | 发货后可以改收件人吗？
- negation | 发货后为什么不能改地址？

A zh | 我的鞋子能换尺码吗？
+ reorder | 能换尺码吗，我买的鞋子
+ politeness | 你好，我的鞋子能换尺码吗？麻烦了
- object | 我的鞋子能换颜色吗？
- object | 我的裤子能换尺码吗？

A zh | 周六门店几点关门？
+ reorder | 门店周六几点关门？
+ paraphrase | 礼拜六店里营业到几点
- object | 周日门店几点关门？
- antonym | 周六门店几点开门？

A zh | 用什么快递发货？
+ reorder | 发货用什么快递？
+ paraphrase | 东西走哪家物流寄
- object | 用什么快递退货？
- topic | 发货后多久能到？

A zh | 开通了会员能包邮吗？
+ reorder | 能包邮吗，如果开通了会员
+ a_not_a | 开通了会员能不能包邮？
- antonym | 关闭了会员还能包邮吗？
- object | 开通了会员能打折吗？

A zh | 增加收货地址在哪里操作？
+ paraphrase | 怎么新建一个收货地址
+ reorder | 在哪里操作增加收货地址？
- antonym | 删除收货地址在哪里操作？
- object | 增加发票抬头在哪里操作？

A zh | 快递显示签收了，可我没拿到
+ paraphrase | 物流说已经签收了，但东西我根本没收到
+ politeness | 亲，快递显示签收了，可我没拿到，麻烦帮忙看看
- negation | 快递显示没签收，可我已经拿到了
- qualifier | 快递显示签收了，可我没拿到，快递柜里也没有

A zh | 有没有大码？
+ a_not_a | 有大码吗？
+ paraphrase | 胖一点的能穿的码有吗
- antonym | 有没有小码？
- qualifier | 有没有加大码的羽绒服？

A zh | 这款耳机续航多久？
+ paraphrase | 这个耳机充满电能用几个小时
+ reorder | 续航多久啊，这款耳机
+ typo | 这款耳机续航多久?
- qualifier | 这款耳机开降噪续航多久？
- object | 这款耳机充电要多久？
- object | 这款手表续航多久？

A zh | 蓝色的比黑色的便宜吗？
+ reorder | 黑色的比蓝色的贵吗？
+ paraphrase | 蓝色款价格是不是比黑色款低
- antonym | 蓝色的比黑色的贵吗？
- object | 蓝色的比黑色的轻吗？

A zh | 5公斤的包裹寄过去多少钱？
+ same_number | 五公斤的包裹寄过去多少钱？
+ same_number | 10斤的包裹寄过去多少钱？
+ same_number | 5kg的包裹寄过去多少钱？
- number | 15公斤的包裹寄过去多少钱？
- number | 5斤的包裹寄过去多少钱？
- qualifier | 5公斤的包裹寄顺丰次日达多少钱？

A zh | 线上和门店价格一样吗？
+ reorder | 门店和线上价格一样吗？
+ paraphrase | 网上买和去店里买是同一个价吗
- object | 线上和门店款式一样吗？
- qualifier | 双十一线上和门店价格一样吗？

A zh | 周五之前能送到吗？
+ reorder | 能在周五之前送到吗？
+ typo | 周五之前能送到吗?
+ a_not_a | 周五之前能不能送到？
- object | 周一之前能送到吗？
- qualifier | 加急的话周五之前能送到吗？
- negation | 为什么周五之前送不到？

A zh | 积分和优惠券能一起用吗？
+ reorder | 优惠券和积分能一起用吗？
+ a_not_a | 积分和优惠券能不能一起用？
- object | 积分和礼品卡能一起用吗？
- negation | 积分和优惠券为什么不能一起用？

A zh | 充电器是送的还是要单独买？
+ reorder | 充电器要单独买还是送的？
+ paraphrase | 盒子里带充电头吗，还是得另外买
- object | 手机壳是送的还是要单独买？
- topic | 充电器单独买多少钱？

A zh | 我想退上周买的破壁机
+ reorder | 上周买的破壁机，我想退了
+ politeness | 你好，我想退上周买的破壁机，麻烦了
+ paraphrase | 上个礼拜下单的破壁机想退货
- object | 我想换上周买的破壁机
- object | 我想退上周买的电饭煲
- qualifier | 我想退去年买的破壁机

A zh | 有儿童鞋的尺码表吗？
+ paraphrase | 小孩的鞋子码数怎么对照
+ a_not_a | 有没有儿童鞋的尺码表？
- object | 有女鞋的尺码表吗？
- object | 有儿童外套的尺码表吗？

A zh | 机票可以加一件托运行李吗？
+ paraphrase | 航班能多买一件托运额度吗
+ a_not_a | 机票能不能加一件托运行李？
- antonym | 机票可以减掉一件托运行李吗？
- number | 机票可以加两件托运行李吗？
- object | 机票可以加一件手提行李吗？

A zh | 这个套餐短信是无限量的吗？
+ paraphrase | 这个套餐短信是不限条数的吗
+ a_not_a | 这个套餐短信是不是无限量的？
- object | 这个套餐通话是无限量的吗？
- qualifier | 这个套餐国际短信是无限量的吗？

A zh | 会员日是每月8号吗？
+ same_number | 会员日是每月八号吗？
+ same_number | 会员日是每个月８号吗？
+ a_not_a | 会员日是不是每月8号？
- number | 会员日是每月18号吗？
- number | 会员日是每月28号吗？
- number | 会员日是每周三吗？

A zh | 能帮我把两个订单一起开一张发票吗？
+ paraphrase | 两单可以合开一张票吗
+ same_number | 能帮我把2个订单一起开一张发票吗？
- number | 能帮我把三个订单一起开一张发票吗？
- antonym | 能帮我把一个订单拆开开两张发票吗？

A zh | 麻烦问下，羽绒服能不能机洗？
+ politeness | 羽绒服能机洗吗
+ a_not_a | 羽绒服可以机洗吗？
+ paraphrase | 羽绒服可以放洗衣机洗吗
- object | 羽绒服能不能干洗？
- object | 羊绒大衣能不能机洗？
- qualifier | 羽绒服能不能机洗烘干？
"""


# ---------------------------------------------------------------------------
# Long pasted messages. Each body has: two greetings, paragraphs, the base
# ending request, two other ending requests, one added fact, and a sign-off.
# ---------------------------------------------------------------------------

LONG_EN = [
    dict(
        greet=("Hi,", "Hello there,"),
        paras=[
            "I'm writing about my recent orders with your store, because I'm getting a little frustrated and I'd like to sort this out in one message instead of going back and forth.",
            "Here is what I've ordered in the last two months:\n- Order 48213, placed October 2: a pair of running shoes (size 9), delivered on time.\n- Order 48877, placed October 19: two cotton T-shirts and a rain jacket, delivered four days late.\n- Order 49120, placed November 5: a 12-piece cookware set, still not delivered.",
            "For order 49120 the tracking page has said \"In transit\" for eleven days now, and the last scan was at a sorting facility about 300 miles from my house. I contacted the carrier twice and both times they told me to reach out to the seller. I paid $14.99 for expedited shipping on this order because the cookware was meant to be a birthday present for my mother, and the birthday has now passed.",
            "I've been a customer for about three years and I usually have no problems, so I'm hoping this is just a one-off issue with the carrier.",
        ],
        end="Could you please refund the $14.99 I paid for expedited shipping on order 49120?",
        alts=[
            "Could you please send a replacement cookware set for order 49120 by express delivery?",
            "Could you please cancel order 49120 and refund the full amount to my card?",
        ],
        fact="I should also mention that a neighbor just told me a box with my name on it was left at their door yesterday, although I haven't picked it up yet.",
        sign="Thanks,\nMaria",
    ),
    dict(
        greet=("Hi,", "Good morning,"),
        paras=[
            "I'm looking at one of your tents and want to double-check something before I buy. Here's the description copied from your product page:",
            "\"The TrailPeak 2 is a lightweight two-person backpacking tent designed for three-season use. It weighs 3.1 pounds packed, sets up in under five minutes with a single color-coded hub pole, and features two doors and two vestibules so neither camper has to climb over the other. The rainfly is made from 20-denier ripstop nylon with a 1,500 mm waterproof coating, and all seams are factory taped. The floor measures 88 by 52 inches with a peak height of 42 inches. Includes 8 aluminum stakes, 4 guylines, and a compression stuff sack. Footprint sold separately.\"",
            "My partner and I are planning a week-long hiking trip in the mountains next month. We'll each carry a medium-sized backpack, and we'd like to keep our total pack weight as low as we reasonably can without being uncomfortable at night.",
        ],
        end="Based on this, would this tent be a good choice for our trip?",
        alts=[
            "Will two sleeping pads that are 25 inches wide fit side by side on the floor?",
            "If I set it up once in my backyard to test it, can I still return it?",
        ],
        fact="I should add that we'll be camping above the snow line, and the forecast mentions possible snowfall at night.",
        sign="Thanks in advance,\nChris",
    ),
    dict(
        greet=("Dear Customer Service,", "Hello,"),
        paras=[
            "I received my order #A77125 yesterday afternoon and unfortunately I'm not happy with what arrived. The order was a ceramic table lamp (model Lumen 40, in sage green) together with two matching linen lampshades.",
            "The outer box looked fine, but when I opened it the lamp base had a crack running from the bottom almost up to the switch, and one of the lampshades was crushed on one side. The packing inside was just a single layer of paper, with no foam or bubble wrap around the ceramic base. I've taken photos of the box, the packaging and the damage from several angles, and I can send them over right away.",
            "I paid $89.00 for the lamp and $24.00 each for the shades, so $137.00 in total, using my Visa card ending in 4421. The lamp was supposed to go in our guest room before family arrives in ten days.",
        ],
        end="Please let me know how I can get a replacement lamp and shade sent out before then.",
        alts=[
            "Please let me know how I can return everything for a full refund instead.",
            "Please let me know whether I can keep the undamaged shade and get a partial refund for the rest.",
        ],
        fact="When I plugged the lamp in to check it, it also sparked and tripped the circuit breaker.",
        sign="Kind regards,\nDaniel Okafor",
    ),
    dict(
        greet=("Hi,", "Hey there,"),
        paras=[
            "I was chatting with one of your agents earlier but the chat disconnected, so I'm pasting what we had so far:",
            "[10:02] Me: Hi, I want to change my phone plan.\n[10:02] Agent (Priya): Hello! I'd be happy to help. Can you confirm the account holder's name and the last four digits of the number?\n[10:03] Me: Jordan Lee, 7719.\n[10:04] Agent (Priya): Thanks, Jordan. I can see you're on the Basic 10GB plan at $35 a month with two lines. What would you like to change?\n[10:05] Me: My daughter keeps running out of data around the 20th of every month, and we usually end up buying a $10 top-up.\n[10:06] Agent (Priya): I understand. There are a couple of options, and I can also check whether there are any promotions on your account.\n[10:08] Me: Great, thanks.\n[10:09] Agent (Priya): One moment please while I look into it...",
            "And then the chat just ended. I'd rather not repeat the identity check from scratch if you can see the earlier conversation on your side.",
        ],
        end="Can you upgrade both lines to the Unlimited plan starting next billing cycle?",
        alts=[
            "Can you upgrade only my daughter's line to the Unlimited plan and leave mine on Basic?",
            "Can you tell me which promotions are on my account before I decide anything?",
        ],
        fact="Also, since the chat, a renewal notice came in saying my current contract ends this Friday.",
        sign="Thanks,\nJordan",
    ),
    dict(
        greet=("Hello,", "Hi team,"),
        paras=[
            "I'm a member of your weekly grocery box subscription and I have a question about my recent charges. Here is my billing history as shown in my account:",
            "Jan 6 - Weekly Family Box - $62.50 - delivered\nJan 13 - Weekly Family Box - $62.50 - delivered\nJan 20 - Weekly Family Box - $62.50 - skipped (I clicked \"skip this week\" on Jan 16)\nJan 27 - Weekly Family Box - $62.50 - delivered\nFeb 3 - Weekly Family Box + Fruit Add-on - $71.00 - delivered",
            "As you can see, I was charged for the Jan 20 box even though I skipped that week well ahead of the deadline, and I still have the confirmation email saying the skip was successful. Also, I never added the fruit add-on for Feb 3. I think it may have been added automatically as part of a promotion, but I didn't agree to it.",
            "I like the service overall, the produce is good, and I'd like to keep using it.",
        ],
        end="Could you refund the $62.50 for the skipped January 20 box?",
        alts=[
            "Could you refund the $8.50 fruit add-on from February 3 and make sure it isn't added again?",
            "Could you switch my subscription from weekly to every other week from now on?",
        ],
        fact="I should mention that the January 20 box actually did show up at my door, even though I had skipped it.",
        sign="Best,\nSam",
    ),
    dict(
        greet=("Hi support team,", "Hello,"),
        paras=[
            "I bought a Nimbus 14 laptop from your online store on March 12 last year (order 3302918), and it's still under the two-year manufacturer warranty that was listed on the product page.",
            "Over the past three weeks, the laptop has started shutting down on its own, usually after about 20 minutes of use, even when the battery shows more than 50%. I've updated the BIOS and all drivers, run the built-in hardware diagnostics (it reported a battery health warning), and tried a full factory reset. None of this fixed the problem. It also gets noticeably hot near the hinge just before it shuts off.",
            "I use this laptop for work every day, so being without it for a long time would be difficult. I still have the original box, the charger and the invoice you emailed me.",
        ],
        end="What is the process to send it in for a warranty repair?",
        alts=[
            "Can I get a replacement battery shipped to me so I can install it myself?",
            "Is it possible to get a loaner laptop while mine is being repaired?",
        ],
        fact="I should also admit that I spilled a small amount of coffee on the keyboard about a month ago, though it seemed fine afterward.",
        sign="Thank you,\nAlex",
    ),
    dict(
        greet=("Hello,", "Hi,"),
        paras=[
            "I'm writing about a hotel booking I made through your site, confirmation number HX-559201. The booking is for two adults and one child at the Harborview Hotel, checking in on July 14 and checking out on July 18, four nights in total, in a Deluxe King room with breakfast included. I paid $812 up front.",
            "Yesterday I got an email from the hotel saying that the pool will be closed for renovation during our whole stay, and that breakfast will be a reduced continental menu instead of the full buffet described on your listing. The pool was honestly one of the main reasons we picked this hotel, because our son is six and has been looking forward to it for weeks.",
            "I checked the listing again today and it still shows photos of the pool and says \"full buffet breakfast\", with no mention of the renovation anywhere on the page.",
        ],
        end="Can I cancel this booking without a penalty, given that the listing was inaccurate?",
        alts=[
            "Can you move us to another hotel nearby that has a working pool, for the same dates and price?",
            "Can you give us a partial refund if we decide to keep the booking?",
        ],
        fact="For context, the rate I booked was marked as non-refundable at the time of purchase.",
        sign="Regards,\nPriya and Tom",
    ),
    dict(
        greet=("Hi there,", "Hello,"),
        paras=[
            "I placed order 71604 last week and received it on Monday. It contained five items:",
            "1. Merino wool crew-neck sweater, grey, size M - $78\n2. Slim-fit chinos, navy, 32x32 - $54\n3. Slim-fit chinos, khaki, 32x32 - $54\n4. Cotton oxford shirt, white, size M - $45\n5. Leather belt, brown, size 34 - $35",
            "The sweater and the white shirt fit perfectly and I'm keeping them. Both pairs of chinos are too tight around the thigh, even though I normally wear a 32 waist in your brand, and the belt is about an inch too short. All of the items I'm sending back are unworn, with the tags still attached, and I still have the original bags they came in.",
            "I bought everything with a 15% off welcome code, so I understand any refund would be based on the discounted prices.",
        ],
        end="Could you send me a prepaid return label for the two pairs of chinos and the belt?",
        alts=[
            "Could I exchange both pairs of chinos for the relaxed-fit version in 32x32 instead of returning them?",
            "Could you tell me exactly how much I'll be refunded for the two pairs of chinos and the belt?",
        ],
        fact="Also, I realize now that I ordered these from your outlet site rather than the main store.",
        sign="Cheers,\nBen",
    ),
]

LONG_ZH = [
    dict(
        greet=("客服你好，", "亲，在吗？"),
        paras=[
            "我想反馈一下最近几个订单的情况，内容有点长，麻烦耐心看完，谢谢。",
            "最近两个月在你们店买的东西如下：\n订单20231015-8821，10月15日下单，一双运动鞋（42码），按时收到了；\n订单20231102-3307，11月2日下单，两件纯棉T恤和一件冲锋衣，晚了四天才到；\n订单20231111-6650，双十一当天下单，一套十二件的不粘锅具，到现在还没收到。",
            "最后这个订单的物流信息已经十多天没有更新了，一直停在“运输中”，最后一次扫描是在离我家三百多公里的中转站。我打过两次快递电话，对方都说让我找商家处理。这套锅是买来给我妈当生日礼物的，当时还特意多付了15元选了加急，现在生日都已经过了。",
            "我在你们家买东西快三年了，之前一直都挺满意的，希望这次只是快递那边出了问题。",
            "说实话，快递的问题我也理解不完全是你们的错，但我还是希望店里能帮忙催一下，或者给个明确的处理方案，不要让我一直干等着。",
        ],
        end="麻烦把这单多付的15元加急运费退给我，可以吗？",
        alts=[
            "麻烦给这单重新补发一套锅，走顺丰加急，可以吗？",
            "麻烦直接把这单取消，全款退回到我的支付宝，可以吗？",
        ],
        fact="另外刚才邻居跟我说，昨天有个写着我名字的箱子放在他家门口了，我还没去拿。",
        sign="谢谢！",
    ),
    dict(
        greet=("你好，", "亲，"),
        paras=[
            "我在看你们家这款羽绒服，下单前想确认一下。下面是我从详情页复制过来的介绍：",
            "“极寒系列中长款连帽羽绒服，填充90%白鹅绒，蓬松度700+，充绒量约260克（以L码为准）。面料采用高密度防泼水尼龙，袖口内置防风罗纹，帽檐毛领可拆卸。适用温度约零下20℃至零下5℃。版型偏宽松，建议按平时尺码购买；如果里面要穿厚毛衣，可以拍大一码。水洗标建议干洗或手洗，不可机洗，不可烘干。”",
            "我身高165，体重52公斤，平时一般穿M码，里面习惯穿一件薄的高领毛衣。过完年要去哈尔滨玩一个星期，白天大部分时间都在户外逛，晚上还想去看冰雕，会在外面待比较长的时间。我比较怕冷，去年冬天在北京穿普通的羽绒服都觉得不够暖。",
            "另外我看评论里有人说这款衣服的帽子偏小，戴着会有点压头发，也有人说毛领容易掉毛，不知道是不是个别情况。",
        ],
        end="这件衣服适合我这次出行穿吗？",
        alts=[
            "像我这样的身材，穿M码还是L码比较合适？",
            "如果收到后试穿不合适，吊牌没拆，能七天无理由退货吗？",
        ],
        fact="补充一下，我们行程里还有两天要去漠河，听说那边白天都在零下三十度左右。",
        sign="谢谢亲！",
    ),
    dict(
        greet=("你好，", "客服您好，"),
        paras=[
            "我昨天下午收到了订单号DD20240308771的快递，打开以后非常失望。这单买的是一个陶瓷台灯（型号“月光40”，豆绿色）和两个配套的亚麻灯罩。",
            "外包装箱看起来没什么问题，但是拆开后发现台灯底座从下往上裂了一道缝，差不多裂到开关的位置，其中一个灯罩也被压扁了一边。箱子里只垫了一层薄纸，陶瓷底座外面连泡沫和气泡膜都没有。我已经把外箱、内包装和破损的地方从好几个角度都拍了照片，随时可以发给你们。",
            "台灯是399元，灯罩每个89元，一共577元，用的是信用卡付款。本来是打算放在客房里用的，十天后家里就要来亲戚了。这已经是我第二次在你们家买灯具了，上一次包装就挺好的，所以这次真的有点意外。",
            "希望你们能重视一下包装的问题，易碎的东西只垫一层纸真的不太行，换了别的顾客可能就直接给差评了。",
        ],
        end="请问能不能在这之前给我补发一套新的台灯和灯罩？",
        alts=[
            "请问我能不能把整单都退了，全额退款？",
            "请问完好的那个灯罩我留下，其余的部分退款可以吗？",
        ],
        fact="还有，我刚才插上电试了一下，台灯冒了火花，家里的空气开关都跳闸了。",
        sign="盼回复，谢谢。",
    ),
    dict(
        greet=("你好，", "在吗？"),
        paras=[
            "刚才和你们在线客服聊到一半突然断线了，我把之前的聊天记录贴过来：",
            "【10:02】我：你好，我想改一下手机套餐。\n【10:02】客服小周：您好，很高兴为您服务！请提供一下机主姓名和手机号后四位。\n【10:03】我：李明，7719。\n【10:04】客服小周：好的李先生，看到您目前是每月39元的30G基础套餐，名下有两张卡。请问您想怎么调整呢？\n【10:05】我：我女儿那张卡每个月到20号左右流量就用完了，每次都要再花10块钱买流量包。\n【10:06】客服小周：明白，这边有几种方案，我再帮您查一下账户上有没有可以参加的优惠活动。\n【10:08】我：好的，谢谢。\n【10:09】客服小周：请稍等，我这边查询一下……",
            "然后对话就断了。如果你们那边能看到之前的记录，我就不用再重新验证一遍身份了。",
            "我们家两张卡都是用了好几年的老号码，不想换号，所以不管办什么套餐都希望能保留现在的号码。平时我自己的流量基本用不完，每个月都还剩一半左右。",
        ],
        end="能不能从下个月开始把两张卡都升级成不限量套餐？",
        alts=[
            "能不能只把我女儿那张卡升级成不限量套餐，我这张保持不变？",
            "能不能先告诉我账户上有哪些优惠活动，我再决定？",
        ],
        fact="另外补充一下，刚刚收到短信通知，说我的合约这周五就到期了。",
        sign="谢谢。",
    ),
    dict(
        greet=("你好，", "亲，你好，"),
        paras=[
            "我是你们家每周生鲜套餐的会员，想问一下最近扣费的问题。下面是我账户里显示的扣费记录：",
            "1月6日 家庭周套餐 ¥168 已送达\n1月13日 家庭周套餐 ¥168 已送达\n1月20日 家庭周套餐 ¥168 已跳过（我1月16日就点了“本周暂停”）\n1月27日 家庭周套餐 ¥168 已送达\n2月3日 家庭周套餐+水果加购 ¥196 已送达",
            "可以看到，1月20日那周我明明已经在截止时间前暂停了，还收到了“暂停成功”的短信，但还是被扣了168元。另外2月3日的水果加购我根本没有选过，可能是什么活动自动给我加上的，但我并没有同意过。",
            "整体来说我还是挺喜欢你们家的菜的，新鲜，送货也准时，也打算继续订下去。",
            "我平时工作比较忙，都是在手机上操作的，每次暂停之前都会仔细确认一遍，所以应该不是我点错了。之前有一次暂停也是正常的，没有扣钱。希望你们能帮我查一下系统里的记录。",
        ],
        end="能把1月20日暂停那周扣的168元退给我吗？",
        alts=[
            "能把2月3日的水果加购28元退给我，并且以后不要再自动加了吗？",
            "能从现在开始把我的套餐改成两周送一次吗？",
        ],
        fact="需要说明的是，1月20日那周的套餐其实还是送到我家门口了，虽然我已经点了暂停。",
        sign="谢谢！",
    ),
    dict(
        greet=("客服你好，", "你好，"),
        paras=[
            "我去年3月12日在你们官方旗舰店买了一台云帆14笔记本电脑（订单号3302918），页面上写的是整机保修两年，现在还在保修期内。",
            "最近三个星期，这台电脑经常用二十分钟左右就自己关机，哪怕电量显示还有一半以上。我已经更新了BIOS和所有驱动，也跑了自带的硬件检测（提示电池健康度异常），还做了一次恢复出厂设置，都没有用。每次关机之前，转轴附近都会明显发烫。",
            "我每天上班都要用这台电脑，如果送修时间太长会很麻烦。原包装盒、充电器和你们开的电子发票我都还留着，需要的话可以一起寄过去。电脑平时基本都是放在办公桌上插着电源用，很少带出门，也没有摔过。保修卡上的序列号我也核对过，和机身上的一致。",
            "之前在别的地方修过电脑，等了快一个月，所以这次想先问清楚流程和大概需要多长时间，再决定怎么处理。",
        ],
        end="请问寄修保修的流程是怎样的？",
        alts=[
            "能不能直接寄一块新电池给我，我自己换？",
            "送修期间能不能借我一台备用机？",
        ],
        fact="还有一点要说明，大概一个月前我不小心把一点咖啡洒在了键盘上，不过当时擦干后用着没什么问题。",
        sign="麻烦尽快回复，谢谢。",
    ),
    dict(
        greet=("你好，", "客服在吗？"),
        paras=[
            "我在你们平台订了一个酒店，订单号HT559201。入住人是两大一小，7月14日入住，7月18日退房，一共四晚，房型是含双早的豪华大床房，已经在线支付了3280元。",
            "昨天酒店给我发短信，说我们入住期间游泳池要装修，整个都不开放，早餐也从自助餐改成了简易套餐。游泳池其实是我们选这家酒店的主要原因，我儿子今年六岁，好几个星期前就一直盼着去玩水。",
            "我今天又看了一下你们平台上的酒店页面，还是放着游泳池的照片，写的也是“豪华自助早餐”，完全没有提装修的事情。我们这次是专门请了年假带孩子出去玩的，机票也早就订好了，日期不太好改。如果需要的话，我可以把酒店发来的短信截图发给你们，希望你们能帮忙核实一下酒店的情况。",
            "孩子知道以后一直在问是不是去不了游泳了，我们也挺着急的，想尽快把这件事定下来。",
        ],
        end="这种情况下，我能免费取消这个订单吗？",
        alts=[
            "能不能帮我们换到附近一家有泳池的酒店，日期和价格都不变？",
            "如果我们还是住这家，能退一部分房费吗？",
        ],
        fact="说明一下，我订的时候这个房型标注的是“不可取消”。",
        sign="等你们回复。",
    ),
    dict(
        greet=("亲，在吗？", "你好，"),
        paras=[
            "我上周下的订单71604，周一收到了，里面一共五件：",
            "1. 美利奴羊毛圆领毛衣 灰色 M码 ¥399\n2. 修身休闲裤 藏青 30码 ¥259\n3. 修身休闲裤 卡其 30码 ¥259\n4. 纯棉牛津纺衬衫 白色 M码 ¥199\n5. 牛皮腰带 棕色 110cm ¥159",
            "毛衣和白衬衫都很合身，我留下了。两条休闲裤大腿那里都太紧了，我平时穿你们家30码一直都正好，这次不知道为什么偏小；腰带也短了差不多一个扣眼。要退的东西都没穿过，吊牌都在，原包装袋也都留着。",
            "这单我当时用了一张满1000减100的新人券，所以我知道退款可能要按优惠后的价格来算。快递是顺丰送来的，外包装完好。另外那件白衬衫面料挺好的，之后可能还会再买一件别的颜色。",
            "我之前在你们家也退过一次货，那次是自己寄回去的，运费后来也补给我了，整体体验还不错。这次东西比较多，想看看能不能更方便一点。",
        ],
        end="麻烦给我安排一下两条裤子和腰带的上门取件退货，可以吗？",
        alts=[
            "两条裤子能不能不退，直接换成宽松版的30码？",
            "麻烦算一下两条裤子加腰带退回去，我一共能退多少钱？",
        ],
        fact="另外我才发现，这单是在你们的奥莱折扣店下的，不是在旗舰店。",
        sign="谢谢亲～",
    ),
]


def compose(lang, greet, paras, end, sign, fact=None):
    body = list(paras)
    if fact:
        body.append(fact)
    sep = "\n\n"
    return sep.join([greet] + body + [end, sign])


def whitespace_variant(lang, text):
    # Same message, different whitespace: single newlines between paragraphs,
    # stray spaces around lines, trailing newline.
    out = text.replace("\n\n", "\n")
    lines = out.split("\n")
    lines = [("  " + l + " ") if i % 3 == 1 else l for i, l in enumerate(lines)]
    return "\n".join(lines) + "\n"


def long_pairs():
    pairs = []
    for lang, bodies in (("en", LONG_EN), ("zh", LONG_ZH)):
        for d in bodies:
            g0, g1 = d["greet"]
            a = compose(lang, g0, d["paras"], d["end"], d["sign"])
            for alt in d["alts"]:
                pairs.append((a, compose(lang, g0, d["paras"], alt, d["sign"]), False, "long", lang))
            pairs.append((a, compose(lang, g0, d["paras"], d["end"], d["sign"], fact=d["fact"]), False, "long", lang))
            pairs.append((a, compose(lang, g1, d["paras"], d["end"], d["sign"]), True, "long", lang))
            pairs.append((a, whitespace_variant(lang, a), True, "long", lang))
    return pairs


def parse_seeds(text):
    pairs = []
    anchor = None
    lang = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        head, sep, body = line.partition(" | ")
        if not sep:
            raise ValueError("bad seed line %d: %r" % (lineno, raw))
        body = body.strip()
        tag = head.split()
        if tag[0] == "A":
            lang, anchor = tag[1], body
            continue
        sign, kind = tag
        same = sign == "+"
        if sign not in "+-" or kind not in (TRUE_KINDS if same else FALSE_KINDS):
            raise ValueError("bad kind on line %d: %r" % (lineno, raw))
        pairs.append((anchor, body, same, kind, lang))
    return pairs


def main():
    short = parse_seeds(SEEDS_EN) + parse_seeds(SEEDS_ZH)
    # The relation is symmetric; put the variant on the cached side for a
    # deterministic ~30% of short pairs so neither side is always the seed.
    rng = random.Random(20240611)
    oriented = []
    for a, b, same, kind, lang in short:
        if rng.random() < 0.3:
            a, b = b, a
        oriented.append((a, b, same, kind, lang))
    allpairs = oriented + long_pairs()

    seen = set()
    rows = []
    for a, b, same, kind, lang in allpairs:
        if a == b:
            raise ValueError("identical pair: %r" % a)
        key = frozenset((a, b))
        if key in seen:
            continue
        seen.add(key)
        rows.append({"a": a, "b": b, "same": same, "kind": kind, "lang": lang})

    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pairs.jsonl")
    with open(out, "w", encoding="utf-8", newline="\n") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print("wrote %d pairs to %s" % (len(rows), out))


if __name__ == "__main__":
    main()
