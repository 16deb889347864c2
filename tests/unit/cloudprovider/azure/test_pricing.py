"""Retail price items to the (SKU, capacity type) price table. The items have the Retail Prices
API's fields; their prices are test data, not Azure's."""

from __future__ import annotations

from karpy.cloudprovider.azure.pricing import parse_prices, price_filter


def _item(sku: str, meter: str, price: float, **changes: object) -> dict[str, object]:
    item: dict[str, object] = {
        "armRegionName": "westus2",
        "armSkuName": sku,
        "skuName": meter,
        "productName": "Virtual Machines DSv3 Series",
        "retailPrice": price,
        "unitOfMeasure": "1 Hour",
        "type": "Consumption",
        "serviceName": "Virtual Machines",
    }
    item.update(changes)
    return item


def test_linux_on_demand_and_spot_prices() -> None:
    table = parse_prices(
        [
            _item("Standard_D2s_v3", "D2s v3", 0.1),
            _item("Standard_D2s_v3", "D2s v3 Spot", 0.02),
            _item("Standard_D2s_v3", "D2s v3 Low Priority", 0.01),
            _item(
                "Standard_D2s_v3", "D2s v3", 0.2, productName="Virtual Machines DSv3 Series Windows"
            ),
            _item("Standard_D2s_v3", "D2s v3", 500.0, type="Reservation", unitOfMeasure="1 Year"),
            _item("Standard_D2s_v3", "D2s v3", 0.09),  # a second meter, cheaper
            _item("Standard_F2s_v2", "F2s v2", 0.0),  # free meters are not prices
        ]
    )
    assert table == {("Standard_D2s_v3", "on-demand"): 0.09, ("Standard_D2s_v3", "spot"): 0.02}


def test_filter_names_the_region_and_pay_as_you_go() -> None:
    assert price_filter("WestUS2") == (
        "serviceName eq 'Virtual Machines' and priceType eq 'Consumption' "
        "and armRegionName eq 'westus2'"
    )
