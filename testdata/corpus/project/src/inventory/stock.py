# TODO: persist
STOCK = {'widget': 10, 'gadget': 0}


def available(item):
    return STOCK.get(item, 0) > 0
